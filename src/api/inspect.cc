// inspect(): the orchestration `staticlm inspect` used to hold: the reference trace (dynamic,
// another checkpoint or a golden file), the static pipeline's trace fed the reference's tokens,
// and their comparison against the thresholds of the checkpoints' tolerance class.
#include "staticlm/inspect.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/guarded.h"
#include "api/thread_count.h"
#include "backends/backend_factory.h"
#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "inspect/inspector.h"
#include "inspect/recorder.h"
#include "inspect/reference_trace.h"
#include "inspect/static_trace.h"
#include "model/checkpoint.h"
#include "model/weight_stats.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "tensor/safetensors.h"
#include "vision/image_decode.h"

namespace staticlm::api {

namespace {

struct ReferenceSource {
  enum class Kind { kDynamic, kModel, kGolden } kind = Kind::kDynamic;
  std::string path;
};

ReferenceSource parse_reference(const std::string& s) {
  if (s == "dynamic") return {};
  if (s.rfind("model:", 0) == 0 && s.size() > 6) return {ReferenceSource::Kind::kModel, s.substr(6)};
  if (s.rfind("golden:", 0) == 0 && s.size() > 7) return {ReferenceSource::Kind::kGolden, s.substr(7)};
  invalid_argument("--reference " + s + ": expected dynamic, model:DIR or golden:FILE.safetensors");
}

inspect::ToleranceClass checkpoint_class(const Checkpoint& ck) {
  const auto counts = weight_dtype_counts(ck.weights());
  const std::string dtype = counts.count("BF16") ? "BF16" : counts.count("F16") ? "F16" : "F32";
  return inspect::tolerance_class(quantization_scheme(ck), dtype);
}

// model:DIR2 must be the same architecture: same layer table, widths and vocabulary.
void check_same_model(const Checkpoint& a, const Checkpoint& b) {
  const TextConfig &x = a.config().text, &y = b.config().text;
  auto differ = [&](const char* field, std::int64_t u, std::int64_t v) {
    invalid_argument("--reference model:" + b.dir() + ": not the same model as " + a.dir() + ": " + field + " " +
                     std::to_string(v) + ", expected " + std::to_string(u));
  };
  if (x.hidden_size != y.hidden_size) differ("hidden_size", x.hidden_size, y.hidden_size);
  if (x.vocab_size != y.vocab_size) differ("vocab_size", x.vocab_size, y.vocab_size);
  if (a.layers().size() != b.layers().size()) {
    differ("num_hidden_layers", static_cast<std::int64_t>(a.layers().size()), static_cast<std::int64_t>(b.layers().size()));
  }
  if (a.layers() != b.layers()) invalid_argument("--reference model:" + b.dir() + ": its layer table differs from " + a.dir() + "'s");
  if (a.config().vision.has_value() != b.config().vision.has_value()) {
    invalid_argument("--reference model:" + b.dir() + ": one checkpoint has a vision tower, the other does not");
  }
}

std::string elapsed_text(std::chrono::steady_clock::time_point t0) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return buf;
}

void progress(const InspectOptions& o, const std::string& line) {
  if (o.log) o.log(line);
}

InspectReport run_inspect(const InspectOptions& a) {
  const ReferenceSource ref = parse_reference(a.reference);
  if (a.prompt && !a.prompt_ids.empty()) invalid_argument("inspect: give at most one of a prompt text and prompt ids");
  std::vector<int> steps = inspect::parse_steps(a.steps);
  if (a.decode_steps && *a.decode_steps < 0) invalid_argument("--decode-steps " + std::to_string(*a.decode_steps) + ": must be >= 0");
  if (a.gen_steps && *a.gen_steps < 0) invalid_argument("--gen-steps " + std::to_string(*a.gen_steps) + ": must be >= 0");
  check_backend_choice(BackendChoice{a.backend, a.fallback});  // before any slow work
  auto ck = Checkpoint::open(a.model_dir);
  const int layers = static_cast<int>(ck->layers().size());

  // A golden file brings its own prompt and max_seq unless they are given.
  std::optional<inspect::Golden> golden;
  std::vector<std::string> sets = a.sets;
  std::optional<std::string> config_file;
  if (!a.config_file.empty()) config_file = a.config_file;
  if (ref.kind == ReferenceSource::Kind::kGolden) {
    std::int64_t golden_seq = 0;
    {
      const RuntimeConfig probe = load_runtime_config(config_file, sets);
      golden_seq = a.max_seq.value_or(probe.max_seq);
    }
    if (!a.max_seq && !config_file) {
      const auto meta = SafetensorsFile::open(ref.path)->metadata();
      if (auto it = meta.find("max_seq"); it != meta.end()) {
        try {
          golden_seq = std::stoll(it->second);
        } catch (const std::exception&) {
          invalid_file(ref.path + ": metadata max_seq '" + it->second + "' is not an integer");
        }
      }
    }
    golden = inspect::load_golden(ref.path, golden_seq, layers);
    sets.push_back("max_seq=" + std::to_string(golden_seq));
  }
  if (a.max_seq) sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  const RuntimeConfig cfg = load_runtime_config(config_file, sets);
  if (cfg.max_seq > ck->config().text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(cfg.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(ck->config().text.max_position_embeddings));
  }
  {
    // Threshold keys are checked before any work (the defaults are replaced later, per class).
    inspect::Thresholds probe = inspect::default_thresholds(inspect::ToleranceClass::kF32);
    inspect::apply_threshold_overrides(probe, cfg.inspect_thresholds);
  }
  std::unique_ptr<Checkpoint> other;
  if (ref.kind == ReferenceSource::Kind::kModel) {
    other = Checkpoint::open(ref.path);
    check_same_model(*ck, *other);
  }
  inspect::TracePlan plan;
  plan.decode_steps = a.decode_steps.value_or(cfg.verify_steps);
  plan.gen_steps = a.gen_steps.value_or(cfg.gen_steps);

  // Step 1's inputs: the processor's unpadded output and the static layout built from it. A
  // prompt without an image is laid out as text only (no image span), as `run` does.
  const bool given_ids = !a.prompt_ids.empty() || (golden && !a.prompt);
  const std::vector<std::string>& image_paths = a.images;
  std::string text;
  if (given_ids) {
    if (!a.images.empty()) invalid_argument("inspect: --image goes with -p or --messages (the text holds <|image|>)");
  } else {
    text = a.prompt ? *a.prompt : cfg.prompt;
  }
  const auto builder = StaticInputBuilder::create(a.model_dir, cfg, /*reserve_decode_slot=*/true, image_paths.empty());
  ProcessorBatch batch;
  if (given_ids) {
    const std::vector<std::int64_t> ids = golden && a.prompt_ids.empty() ? golden->prompt_ids : a.prompt_ids;
    for (const std::int64_t id : ids) {
      if (id < 0 || id >= ck->config().text.vocab_size) {
        invalid_argument("--prompt-ids: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                         std::to_string(ck->config().text.vocab_size) + ")");
      }
    }
    batch.input_ids = Tensor(DType::kI64, Shape{1, static_cast<std::int64_t>(ids.size())});
    std::copy(ids.begin(), ids.end(), batch.input_ids.as<std::int64_t>().begin());
  } else {
    std::vector<RgbImage> images;
    for (const std::string& path : image_paths) images.push_back(decode_image_file(path));
    batch = builder->process(text, images);
  }
  const StaticInputs inputs = build_static_inputs(batch, builder->options());

  SubgraphProfile profile;
  profile.max_seq = inputs.max_seq();
  profile.rope_sine = cfg.rope_sine;
  if (inputs.has_image()) {
    const VisionProfile& v = builder->options().profile;
    set_vision_profile(profile, v);
  }
  const int threads = thread_count(a.threads);
  ThreadPool pool(threads);
  inspect::StaticRun run;
  run.checkpoint = ck.get();
  run.profile = profile;
  run.backend.pool = &pool;
  run.backend.bf16_activations = !a.f32_activations;
  run.mask_fill_value = static_cast<float>(cfg.mask_fill_value);
  // The static side on the chosen back end; the reference stays on the CPU kernels.
  const BackendChoice choice{a.backend, a.fallback};
  if (choice.backend != "cpu") {
    run.make_backend = [&](const Checkpoint& c, const SubgraphProfile& p, const CpuBackendOptions& o) {
      auto b = create_backend(choice, c, p, o);
      if (const std::string where = backend_placement(*b, /*with_calls=*/false); !where.empty()) progress(a, where);
      return b;
    };
  }

  // The reference first: with its own greedy tokens, which the static side is then fed (both
  // sides see the same history in step 7).
  inspect::ToleranceClass tolerance = checkpoint_class(*ck);
  progress(a, "inspect: T " + std::to_string(inputs.length()) + " of S " + std::to_string(inputs.max_seq()) +
             (inputs.has_image() ? ", one image" : "") + "; reference " + a.reference);
  auto t0 = std::chrono::steady_clock::now();
  inspect::Trace reference;
  switch (ref.kind) {
    case ReferenceSource::Kind::kDynamic: {
      inspect::DynamicOptions o;
      o.pool = &pool;
      o.bf16_activations = !a.f32_activations;
      auto dyn = inspect::DynamicReference::create(*ck, o);
      reference = inspect::dynamic_trace(*dyn, batch, inputs.max_seq(), plan, layers);
      break;
    }
    case ReferenceSource::Kind::kModel: {
      inspect::StaticRun r2 = run;
      r2.make_backend = nullptr;  // a model: reference runs on the CPU back end
      r2.checkpoint = other.get();
      inspect::TracePlan own = plan;
      own.feed.clear();
      reference = inspect::static_trace(r2, inputs, own, "model:" + ref.path);
      tolerance = inspect::looser(tolerance, checkpoint_class(*other));
      break;
    }
    case ReferenceSource::Kind::kGolden:
      reference = std::move(golden->trace);
      // Golden masks are optional; HF's dump has what it has.
      plan.decode_steps = std::min<std::int64_t>(plan.decode_steps, reference.decode_logits.size());
      plan.gen_steps = std::min<std::int64_t>(plan.gen_steps, reference.generated.size());
      if (reference.generated.size() > static_cast<std::size_t>(plan.gen_steps)) reference.generated.resize(plan.gen_steps);
      break;
  }
  progress(a, "inspect: reference done in " + elapsed_text(t0));

  plan.feed.assign(reference.decode_tokens.begin(),
                   reference.decode_tokens.begin() + std::min<std::size_t>(reference.decode_tokens.size(), plan.decode_steps));
  if (plan.feed.empty()) plan.decode_steps = 0;
  std::unique_ptr<inspect::Recorder> recorder;
  if (!a.record_dir.empty()) {
    inspect::RecordSetup setup;
    setup.model_dir = a.model_dir;
    setup.profile = profile;
    setup.bf16_activations = run.backend.bf16_activations;
    setup.skip_padded_rows = run.backend.skip_padded_rows;
    recorder = std::make_unique<inspect::Recorder>(a.record_dir, setup);
    run.observers.push_back(recorder->observer());
  }
  t0 = std::chrono::steady_clock::now();
  const inspect::Trace actual = inspect::static_trace(run, inputs, plan, "static");
  if (recorder) recorder->finish();
  progress(a, "inspect: static pipeline done in " + elapsed_text(t0));

  inspect::CompareContext c;
  c.inputs = &inputs;
  c.pad_token_id = *builder->options().pad_token_id;
  c.image_token_id = builder->options().image_token_id;
  c.thresholds = inspect::default_thresholds(tolerance);
  inspect::apply_threshold_overrides(c.thresholds, cfg.inspect_thresholds);
  c.steps = steps;
  inspect::Report report = inspect::compare_traces(actual, reference, c);
  report.model = a.model_dir;
  report.reference = a.reference;
  InspectReport out;
  out.pass = report.pass();
  out.tolerance = inspect::tolerance_class_name(tolerance);
  out.table = inspect::format_table(report);
  out.json = inspect::report_json(report).dump(2);
  return out;
}
}  // namespace

InspectReport inspect(const InspectOptions& options) {
  return guarded([&] { return run_inspect(options); });
}

}  // namespace staticlm::api
