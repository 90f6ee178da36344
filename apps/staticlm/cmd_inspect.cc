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
#include <iostream>
#include <limits>
#include <memory>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "backend_option.h"
#include "commands.h"
#include "inspect/recorder.h"
#include "profile_option.h"
#include "kernel_target_option.h"
#include "prompt_source.h"
#include "runtime/generation_defaults.h"
#include "runtime/runtime_config.h"
#include "staticlm/inspect.h"
#include "threads_option.h"
#include "vision/image_decode.h"

namespace staticlm::cli {

namespace {

struct InspectArgs {
  std::string model;
  std::optional<std::string> config;
  std::vector<std::string> sets;
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
  std::optional<std::string> profile;  // --profile: prepended to sets
};

// A thin adapter over api::inspect (include/staticlm/inspect.h): the prompt flags resolved to
// text (the chat format, messages files), the table printed, the report written.
void inspect_command(const InspectArgs& a) {
  const int prompt_sources = (a.prompt ? 1 : 0) + (a.messages ? 1 : 0) + (a.prompt_ids ? 1 : 0);
  if (prompt_sources > 1) invalid_argument("inspect: give at most one of -p/--prompt, --messages, --prompt-ids");
  if (a.report && a.record) {
    // The report inside the recording would replace a file of it (index.json) or add one.
    namespace fs = std::filesystem;
    const fs::path report = fs::weakly_canonical(*a.report).parent_path(), record = fs::weakly_canonical(*a.record);
    if (report == record) {
      invalid_argument("inspect: --report " + *a.report + " is inside the --record directory " + *a.record +
                       "; write it elsewhere");
    }
  }
  api::InspectOptions o;
  o.model_dir = a.model;
  o.config_file = a.config.value_or("");
  o.sets = a.sets;
  o.reference = a.reference;
  o.steps = a.steps;
  o.decode_steps = a.decode_steps;
  o.gen_steps = a.gen_steps;
  o.max_seq = a.max_seq;
  o.threads = resolve_threads(a.threads);
  o.f32_activations = a.f32_activations;
  o.record_dir = a.record.value_or("");
  o.backend = a.backend.backend;
  o.fallback = a.backend.fallback;
  o.images = a.images;
  o.log = log_to_stderr;
  apply_kernel_target(a.kernel_target);
  if (a.prompt_ids) {
    o.prompt_ids = parse_token_ids(*a.prompt_ids, std::numeric_limits<std::int64_t>::max(), "--prompt-ids");
  } else if (a.prompt || a.messages || a.chat) {
    PromptSource source;
    source.prompt = a.prompt;
    source.messages = a.messages;
    source.chat = a.chat;
    source.images = a.images;
    source.model_dir = a.model;
    o.prompt = resolve_prompt(source, load_runtime_config(a.config, a.sets), o.images);
  }
  // Before the slow checkpoint load: the images' files and the outputs' places.
  for (const std::string& image : o.images) check_image_file(image);
  if (a.report) check_output_file(*a.report);
  if (a.record) inspect::Recorder::check_dir(*a.record);
  const api::InspectReport report = api::inspect(o);
  std::cout << "inspect " << a.model << " against " << a.reference << " (thresholds: " << report.tolerance << ")\n"
            << report.table << std::flush;
  if (a.report) write_text_atomic(*a.report, report.json + "\n");
  if (!report.pass) throw CommandExit{1};
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
  cmd->add_option("--max-seq", a->max_seq, "static sequence length S")->check(max_seq_range());
  cmd->add_option("--report", a->report, "write the report as JSON");
  cmd->add_option("--record", a->record, "write the static side's subgraph calls to this directory (staticlm replay)");
  cmd->add_option("-t,--threads", a->threads, "CPU threads (default 0: one per core)");
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
