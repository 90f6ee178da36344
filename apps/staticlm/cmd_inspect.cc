// staticlm inspect: the eight side-by-side steps of spec/static-runtime.md (e) with thresholds.
// Other checks call it exactly so:
//   staticlm inspect -m DIR [--config runtime.yaml] [--set k=v]... (-p P | --messages F)
//                    [--image F] [--reference SOURCE] [--steps 1-8] [--decode-steps N]
//                    [--gen-steps N] [--report OUT.json]
// SOURCE: dynamic (default; an independent unpadded execution of DIR), model:DIR2 (the same
// static pipeline on another checkpoint of the model, e.g. the bf16 original of a quantized
// DIR), golden:FILE.safetensors (tools/hf_golden.py; its prompt ids are used when no prompt is
// given). Prints one row per step; exit 0 when every step passes, 1 when one fails, 2 on bad
// input. --report writes the same as JSON (inspect/inspector.h); --record DIR writes the static
// side's subgraph calls (docs/record-replay.md). --backend plugin:PATH.so [--fallback cpu] runs
// the static side on a back-end plug-in (docs/backends.md); the reference stays on the CPU.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "base/file.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "profile_option.h"
#include "backend_option.h"
#include "threads_option.h"
#include "inspect/inspector.h"
#include "inspect/recorder.h"
#include "inspect/reference_trace.h"
#include "inspect/static_trace.h"
#include "kernel_target_option.h"
#include "model/checkpoint.h"
#include "model/weight_stats.h"
#include "prompt_source.h"
#include "runtime/runtime_config.h"
#include "runtime/generation_defaults.h"
#include "runtime/static_input_builder.h"
#include "tensor/safetensors.h"
#include "text/tokenizer.h"
#include "vision/image_decode.h"

namespace staticlm::cli {

namespace {

struct InspectArgs {
  std::string model;
  std::optional<std::string> config;
  std::vector<std::string> sets;
  std::optional<std::string> profile;  // --profile: prepended to sets
  std::optional<std::string> prompt, messages, prompt_ids;
  bool chat = false;
  std::vector<std::string> images;
  std::string reference = "dynamic";
  std::string steps = "1-8";
  std::optional<std::int64_t> decode_steps, gen_steps, max_seq;
  std::optional<std::string> report, record;
  int threads = 0;
  bool f32_activations = false;
  std::optional<std::string> kernel_target;
  BackendChoice backend;
};

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

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void inspect_command(const InspectArgs& a) {
  const ReferenceSource ref = parse_reference(a.reference);
  const int prompt_sources = (a.prompt ? 1 : 0) + (a.messages ? 1 : 0) + (a.prompt_ids ? 1 : 0);
  if (prompt_sources > 1) invalid_argument("inspect: give at most one of -p/--prompt, --messages, --prompt-ids");
  std::vector<int> steps = inspect::parse_steps(a.steps);
  if (a.decode_steps && *a.decode_steps < 0) invalid_argument("--decode-steps " + std::to_string(*a.decode_steps) + ": must be >= 0");
  if (a.gen_steps && *a.gen_steps < 0) invalid_argument("--gen-steps " + std::to_string(*a.gen_steps) + ": must be >= 0");
  apply_kernel_target(a.kernel_target);
  check_backend_choice(a.backend);

  auto ck = Checkpoint::open(a.model);
  const int layers = static_cast<int>(ck->layers().size());

  // A golden file brings its own prompt and max_seq unless they are given.
  std::optional<inspect::Golden> golden;
  std::vector<std::string> sets = a.sets;
  if (ref.kind == ReferenceSource::Kind::kGolden) {
    std::int64_t golden_seq = 0;
    {
      const RuntimeConfig probe = load_runtime_config(a.config, sets);
      golden_seq = a.max_seq.value_or(probe.max_seq);
    }
    if (!a.max_seq && !a.config) {
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
  const RuntimeConfig cfg = load_runtime_config(a.config, sets);
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
  const bool given_ids = a.prompt_ids || (golden && !a.prompt && !a.messages);
  std::vector<std::string> image_paths;
  std::string text;
  if (given_ids) {
    if (!a.images.empty()) invalid_argument("inspect: --image goes with -p or --messages (the text holds <|image|>)");
  } else {
    text = resolve_prompt(PromptSource{a.prompt, a.messages, a.chat, a.images, a.model}, cfg, image_paths);
  }
  const auto builder = StaticInputBuilder::create(a.model, cfg, /*reserve_decode_slot=*/true, image_paths.empty());
  ProcessorBatch batch;
  if (given_ids) {
    const std::vector<std::int64_t> ids = golden && !a.prompt_ids
                                              ? golden->prompt_ids
                                              : parse_token_ids(*a.prompt_ids, ck->config().text.vocab_size, "--prompt-ids");
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
  const int threads = resolve_threads(a.threads);
  ThreadPool pool(threads);
  inspect::StaticRun run;
  run.checkpoint = ck.get();
  run.profile = profile;
  run.backend.pool = &pool;
  run.backend.bf16_activations = !a.f32_activations;
  run.mask_fill_value = static_cast<float>(cfg.mask_fill_value);
  // The static side on the chosen back end; the reference stays on the CPU kernels.
  if (a.backend.backend != "cpu") {
    run.make_backend = [&a](const Checkpoint& c, const SubgraphProfile& p, const CpuBackendOptions& o) {
      auto b = create_backend(a.backend, c, p, o);
      print_backend_placement(*b, /*with_calls=*/false);
      return b;
    };
  }

  // The reference first: with its own greedy tokens, which the static side is then fed (both
  // sides see the same history in step 7).
  inspect::ToleranceClass tolerance = checkpoint_class(*ck);
  std::cerr << "inspect: T " << inputs.length() << " of S " << inputs.max_seq() << (inputs.has_image() ? ", one image" : "")
            << "; reference " << a.reference << "\n";
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
  std::cerr << "inspect: reference done in " << since(t0) << " s\n";

  plan.feed.assign(reference.decode_tokens.begin(),
                   reference.decode_tokens.begin() + std::min<std::size_t>(reference.decode_tokens.size(), plan.decode_steps));
  if (plan.feed.empty()) plan.decode_steps = 0;
  std::unique_ptr<inspect::Recorder> recorder;
  if (a.record) {
    inspect::RecordSetup setup;
    setup.model_dir = a.model;
    setup.profile = profile;
    setup.bf16_activations = run.backend.bf16_activations;
    setup.skip_padded_rows = run.backend.skip_padded_rows;
    recorder = std::make_unique<inspect::Recorder>(*a.record, setup);
    run.observers.push_back(recorder->observer());
  }
  t0 = std::chrono::steady_clock::now();
  const inspect::Trace actual = inspect::static_trace(run, inputs, plan, "static");
  if (recorder) recorder->finish();
  std::cerr << "inspect: static pipeline done in " << since(t0) << " s\n";

  inspect::CompareContext c;
  c.inputs = &inputs;
  c.pad_token_id = *builder->options().pad_token_id;
  c.image_token_id = builder->options().image_token_id;
  c.thresholds = inspect::default_thresholds(tolerance);
  inspect::apply_threshold_overrides(c.thresholds, cfg.inspect_thresholds);
  c.steps = steps;
  inspect::Report report = inspect::compare_traces(actual, reference, c);
  report.model = a.model;
  report.reference = a.reference;
  std::cout << "inspect " << a.model << " against " << a.reference << " (thresholds: "
            << inspect::tolerance_class_name(tolerance) << ")\n"
            << inspect::format_table(report) << std::flush;
  if (a.report) write_text_atomic(*a.report, inspect::report_json(report).dump(2) + "\n");
  if (!report.pass()) throw CommandExit{1};
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  auto* cmd = app.add_subcommand("inspect", "compare the static pipeline with a reference, step by step (8 steps)");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("--config", a->config, "runtime config YAML (also inspect.thresholds.<step>.<metric>)");
  cmd->add_option("--set", a->sets, "override a config key: KEY=VALUE; repeatable");
  cmd->add_option("-p,--prompt", a->prompt, "prompt text as given (\"<|image|>\" marks the image); default: the config's");
  cmd->add_option("--messages", a->messages, "chat messages (JSON file)");
  cmd->add_option("--prompt-ids", a->prompt_ids, "prompt as comma-separated token ids");
  cmd->add_flag("--chat", a->chat, "wrap -p in the chat format");
  cmd->add_option("--image", a->images, "image file (JPEG or PNG)");
  cmd->add_option("--reference", a->reference, "dynamic (default), model:DIR2 or golden:FILE.safetensors");
  cmd->add_option("--steps", a->steps, "steps to run, e.g. 1-8 (default), 6, 1,2,6-8");
  cmd->add_option("--decode-steps", a->decode_steps, "decode steps compared in step 7 (default: config verify_steps, 4)");
  cmd->add_option("--gen-steps", a->gen_steps, "greedy tokens compared in step 8 (default: config gen_steps, 16)");
  cmd->add_option("--max-seq", a->max_seq, "static sequence length S");
  cmd->add_option("--report", a->report, "write the report as JSON");
  cmd->add_option("--record", a->record, "write the static side's subgraph calls to this directory (staticlm replay)");
  cmd->add_option("--threads", a->threads, "CPU threads (default 0: one per core)");
  cmd->add_flag("--f32-activations", a->f32_activations, "keep prefill/vision activations f32 on bf16 weights");
  add_kernel_target_option(*cmd, a->kernel_target);
  add_profile_option(*cmd, a->profile);
  add_backend_options(*cmd, a->backend);
  cmd->callback([a] {
    a->sets = with_profile(a->sets, a->profile);
    inspect_command(*a);
  });
}

}  // namespace staticlm::cli
