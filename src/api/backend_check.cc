#include "api/backend_check.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend_factory.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "base/file.h"
#include "base/thread_pool.h"
#include "inspect/backend_check.h"
#include "model/checkpoint.h"
#include "runtime/argmax.h"
#include "runtime/runtime.h"
#include "runtime/static_input_builder.h"
#include "runtime/generation_defaults.h"
#include "runtime/runtime_config.h"
#include "text/tokenizer.h"
#include "vision/image_decode.h"

namespace staticlm::api {

namespace {

inspect::ToleranceClass parse_tolerance(const std::string& s) {
  using inspect::ToleranceClass;
  if (s == "f32") return ToleranceClass::kF32;
  if (s == "half") return ToleranceClass::kHalf;
  if (s == "q8") return ToleranceClass::kQ8;
  if (s == "q4") return ToleranceClass::kQ4;
  if (s == "npu-w4") return ToleranceClass::kNpuW4;
  invalid_argument("--tolerance '" + s + "': expected f32, half, q8, q4 or npu-w4");
}

// The prompt's ids: --prompt-ids as given, or -p through the checkpoint's tokenizer.
std::vector<std::int64_t> text_prompt(const BackendCheckOptions& a, const Checkpoint& ck) {
  if (a.prompt_ids) return parse_token_ids(*a.prompt_ids, ck.config().text.vocab_size, "--prompt-ids");
  const std::string tok_path = path_join(a.model, "tokenizer.json");
  if (!file_exists(tok_path)) {
    invalid_argument("backend-check: -p needs " + tok_path + ", which does not exist; give --prompt-ids instead");
  }
  const std::vector<int> ids = staticlm::Tokenizer::load(tok_path)->encode(*a.prompt);
  if (ids.empty()) invalid_argument("backend-check: the prompt is empty");
  return {ids.begin(), ids.end()};
}

// An image prompt laid out by the runtime config's vision profile, and the back-end profile
// whose vision graphs match it.
struct ImagePrompt {
  StaticInputs inputs;
  SubgraphProfile profile;
};

ImagePrompt image_prompt(const BackendCheckOptions& a) {
  if (a.images.size() > 1) {
    invalid_argument("backend-check: " + std::to_string(a.images.size()) +
                     " images given, but the static profile holds one image span: give one --image");
  }
  std::vector<std::string> sets = a.sets;
  if (a.max_seq) sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  const RuntimeConfig config = load_runtime_config(a.config_file, sets);
  const auto builder = StaticInputBuilder::create(a.model, config, /*reserve_decode_slot=*/true);
  if (!builder->has_vision()) {
    invalid_argument("backend-check: --image needs a model with a vision tower; " + a.model + " is text-only");
  }
  const RgbImage image = decode_image_file(a.images[0]);
  ImagePrompt p{builder->build(*a.prompt, std::span(&image, 1)), {}};
  p.profile.max_seq = p.inputs.max_seq();
  p.profile.rope_sine = config.rope_sine;
  set_vision_profile(p.profile, builder->options().profile);
  return p;
}

// Runs the prompt through the CPU back end and keeps the first call of every graph.
std::vector<inspect::CheckCall> generated_calls(const BackendCheckOptions& a, const Checkpoint& ck, SubgraphProfile& profile,
                                                const CpuBackendOptions& bo) {
  std::optional<ImagePrompt> image;
  std::vector<std::int64_t> ids;
  if (!a.images.empty()) {
    if (!a.prompt) invalid_argument("backend-check: --image goes with -p (its text holds the <|image|> placeholder)");
    image = image_prompt(a);
    profile = image->profile;
  } else {
    const RuntimeConfig cfg = load_runtime_config(a.config_file, a.sets);
    profile.max_seq = a.max_seq.value_or(cfg.max_seq);
    profile.rope_sine = cfg.rope_sine;
    ids = text_prompt(a, ck);
    if (static_cast<std::int64_t>(ids.size()) + a.decode_steps > profile.max_seq - 1) {
      invalid_argument("backend-check: the prompt (" + std::to_string(ids.size()) + " tokens) and " +
                       std::to_string(a.decode_steps) + " decode steps do not fit max_seq " +
                       std::to_string(profile.max_seq) + "; raise --max-seq");
    }
  }
  auto cpu = CpuBackend::create(ck, profile, bo);
  ObservedBackend observed(*cpu);
  inspect::FirstCallSampler sampler;
  observed.add_observer(sampler.observer());
  auto runtime = Runtime::create(observed, ck.config(), ck.layers());
  std::span<const float> logits;
  if (image) {
    logits = runtime->prefill(prefill_input(image->inputs));
  } else {
    logits = runtime->prefill_tokens(ids);
  }
  for (std::int64_t i = 0; i < a.decode_steps && runtime->remaining_capacity() > 0; ++i) {
    logits = runtime->decode(argmax_first(logits));
  }
  return sampler.take();
}

}  // namespace

inspect::BackendCheck run_backend_check(const BackendCheckOptions& a) {
  const BackendSpec spec = check_backend_choice({a.backend, "none"});
  if (!spec.plugin) invalid_argument("backend-check: --backend must be plugin:PATH.so (cpu is the reference)");
  const inspect::ToleranceClass tolerance = parse_tolerance(a.tolerance);
  if (a.decode_steps < 0) invalid_argument("--decode-steps " + std::to_string(a.decode_steps) + ": must be >= 0");
  if (a.record && (a.prompt || a.prompt_ids || !a.images.empty())) {
    invalid_argument("backend-check: --record DIR brings its own inputs; drop -p, --prompt-ids and --image");
  }
  if (a.prompt && a.prompt_ids) invalid_argument("backend-check: give -p or --prompt-ids, not both");
  if (!a.record && !a.prompt && !a.prompt_ids) {
    invalid_argument("backend-check: give --record DIR, -p TEXT or --prompt-ids IDS for the inputs");
  }
  std::optional<inspect::Recording> recording;
  if (a.record) recording = inspect::read_recording(*a.record);
  auto ck = Checkpoint::open(a.model);
  ThreadPool pool(a.threads);
  CpuBackendOptions bo;
  bo.pool = &pool;

  SubgraphProfile profile;
  std::vector<inspect::CheckCall> calls;
  if (recording) {
    profile = recording->setup.profile;
    bo.bf16_activations = recording->setup.bf16_activations;
    bo.skip_padded_rows = recording->setup.skip_padded_rows;
  } else {
    calls = generated_calls(a, *ck, profile, bo);
  }
  auto plugin = PluginBackend::load(spec.path, spec.options, ck->dir(), ck->config(), ck->layers(), profile);
  if (recording) {
    calls = inspect::first_recorded_calls(*recording, *plugin);
    auto cpu = CpuBackend::create(*ck, profile, bo);
    inspect::recompute_reference(*cpu, calls);
  }

  inspect::BackendCheck check;
  check.backend = plugin->name();
  check.model_dir = a.model;
  check.source = recording ? "recording " + recording->dir : "generated run";
  check.tolerance = tolerance;
  for (const SubgraphSignature& s : gemma4_subgraph_signatures(ck->config(), ck->layers(), profile)) {
    if (!plugin->has(s.name)) check.not_provided.push_back(s.name);
  }
  if (a.log) {
    a.log("backend-check: " + plugin->name() + " provides " + std::to_string(plugin->signatures().size()) + " graphs; " +
          std::to_string(calls.size()) + " calls from the " + check.source);
  }
  for (const SubgraphSignature& s : plugin->signatures()) {
    bool ran = false;
    for (const inspect::CheckCall& c : calls) {
      if (c.graph != s.name) continue;
      check.graphs.push_back(inspect::check_call(*plugin, c, tolerance));
      ran = true;
    }
    if (!ran) check.not_exercised.push_back(s.name);
  }
  return check;
}


}  // namespace staticlm::api
