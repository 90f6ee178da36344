// staticlm run -m DIR [--config runtime.yaml] [--set k=v]... (-p PROMPT | --prompt-ids 2,105,...
// | --messages F) [--chat] [--image F]... [-n N] [--max-seq S] [--temp T] [--top-k K] [--top-p P]
// [--min-p P] [--repetition-penalty R] [--seed S] [--threads N] [--stop STR]...
// [--dump-logits OUT.safetensors] [--record DIR [--record-graph NAME]...]
// [--backend cpu|plugin:PATH.so[:key=value,...]] [--fallback none|cpu]
//
// With --image F (one image: the static layout holds one span) the runtime config (--config,
// --set: vision_profile, image_fit, max_seq, ...) gives the vision profile; the prompt's
// <|image|> is expanded and laid out by the StaticInputBuilder, encoded by vision_prefill and
// fused into its span. The image encode time is reported on its own line.
//
// Generates with the CPU backend: streams the generated text to stdout (control tokens left
// out; token ids, space separated, when the checkpoint has no tokenizer.json) and prints
// statistics to stderr. -p is tokenized as given, or in the chat format with --chat;
// --messages (OpenAI-style JSON) always uses the chat format. Chat prompts are rendered with the
// checkpoint's chat template (--chat-template overrides; --tools and --var feed it), else the
// built-in Gemma 4 format. --json prints {"text", "tool_calls"} at the end instead of streaming,
// with the Gemma 4 tool calls (<|tool_call>call:NAME{...}<tool_call|>) parsed out of the text. `--temp 0`
// is greedy; sampling defaults come from generation_config.json (greedy without one). Stops on
// any EOS id of the checkpoint, a stop string, -n tokens, or when the KV cache is full (a clean
// stop with a message, exit 0).
//
// --backend plugin:... runs the subgraphs in a back-end plug-in (docs/backends.md); which graphs
// ran where is printed with the statistics.
//
// --record DIR writes every subgraph call's inputs and outputs (one safetensors file per call)
// and an index.json to DIR, a new or empty directory, for `staticlm replay`
// (docs/record-replay.md); --record-graph limits it to some graphs. What is generated is the same.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backend_option.h"
#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "base/file.h"
#include "base/thread_pool.h"
#include "backends/observed_backend.h"
#include "commands.h"
#include "profile_option.h"
#include "threads_option.h"
#include "inspect/recorder.h"
#include "kernel_target_option.h"
#include "run_image.h"
#include "sampling_flags.h"
#include "model/checkpoint.h"
#include "runtime/generation_defaults.h"
#include "runtime/logits_dump.h"
#include "runtime/rope.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"
#include "prompt_source.h"
#include "text/tool_calls.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace staticlm::cli {

namespace {

struct RunArgs {
  std::string model;
  std::optional<std::string> config_file;
  std::vector<std::string> sets;
  std::optional<std::string> profile;  // --profile: prepended to sets
  std::optional<std::string> prompt, prompt_ids, messages, tools;
  std::string chat_template;
  std::vector<std::string> vars;
  bool chat = false, json = false;
  std::vector<std::string> images;
  std::optional<std::int64_t> max_seq;
  SamplingFlags sampling;  // -n, --temp, --top-k, --top-p, --min-p, --repetition-penalty, --seed, --stop
  int threads = 0;  // 0: one per hardware thread
  bool f32_activations = false;
  std::optional<std::string> kernel_target;
  std::optional<std::string> dump_logits;
  std::optional<std::string> record;
  std::vector<std::string> record_graphs;
  BackendChoice backend;
};

// The runtime settings `run` reads from --config / --set (the keys of the runtime config).
struct RunSettings {
  std::int64_t max_seq = 2048;
  float mask_fill_value = kDefaultMaskFill;
  RopeSine rope_sine = RopeSine::kPreNegatedSin;
  std::vector<std::int64_t> prefill_buckets;  // set: a text prompt is prefilled by bucket
};

RunSettings settings_from(const RunArgs& a) {
  // The runtime config file (TICO's static_gemma4_runtime.yaml keys plus staticlm's), then
  // each --set in order; unknown keys and bad values are errors naming them.
  const RuntimeConfig config = load_runtime_config(a.config_file, a.sets);
  RunSettings s;
  s.max_seq = config.max_seq;
  s.mask_fill_value = static_cast<float>(config.mask_fill_value);
  s.rope_sine = config.rope_sine;
  if (a.max_seq) s.max_seq = *a.max_seq;
  if (s.max_seq < 2) invalid_argument("--max-seq " + std::to_string(s.max_seq) + ": must be at least 2");
  if (config.prefill_buckets) s.prefill_buckets = append_buckets_for(config, s.max_seq);
  if (!(s.mask_fill_value < 0) || !std::isfinite(s.mask_fill_value)) {
    invalid_argument("--set mask_fill_value: must be a finite negative number");
  }
  return s;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

std::string rate(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f tok/s", r);
  return buf;
}

// The checkpoint's tokenizer.json, or null when it has none.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& model_dir) {
  const std::string path = path_join(model_dir, "tokenizer.json");
  return file_exists(path) ? Tokenizer::load(path) : nullptr;
}

// The chat prompt of --messages or -p --chat: the checkpoint's chat template (or --chat-template),
// else the built-in Gemma 4 format.
std::string chat_text(const RunArgs& a) {
  std::vector<std::string> images;
  return resolve_prompt(PromptSource{a.prompt, a.messages, a.chat, {}, a.model, a.chat_template, a.tools, a.vars},
                        RuntimeConfig{}, images);
}

// The prompt as token ids: --prompt-ids as given; -p as given, or wrapped in the chat format
// with --chat; --messages always in the chat format.
std::vector<std::int64_t> prompt_ids(const RunArgs& a, const ModelConfig& config, const Tokenizer* tok) {
  if (a.prompt_ids) {
    if (a.chat) invalid_argument("run: --chat goes with -p, not --prompt-ids");
    return parse_token_ids(*a.prompt_ids, config.text.vocab_size, "--prompt-ids");
  }
  if (tok == nullptr) {
    invalid_argument("run: " + std::string(a.prompt ? "-p" : "--messages") + " needs the checkpoint's tokenizer.json, " +
                     "which " + a.model + " does not have; give --prompt-ids instead");
  }
  const std::string text = a.messages || a.chat ? chat_text(a) : *a.prompt;
  const std::vector<int> ids = tok->encode(text);
  if (ids.empty()) invalid_argument("run: the prompt is empty");
  return {ids.begin(), ids.end()};
}

void run_command(const RunArgs& a) {
  const int sources = (a.prompt ? 1 : 0) + (a.prompt_ids ? 1 : 0) + (a.messages ? 1 : 0);
  if (sources != 1) invalid_argument("run: give exactly one of -p/--prompt, --prompt-ids, --messages");
  check_prompt_utf8(a.prompt);
  if (!a.record && !a.record_graphs.empty()) invalid_argument("run: --record-graph goes with --record DIR");
  if ((a.tools || !a.vars.empty() || !a.chat_template.empty()) && !a.messages && !a.chat) {
    invalid_argument("run: --tools, --var and --chat-template go with --messages or --chat");
  }
  check_backend_choice(a.backend);
  const RunSettings settings = settings_from(a);
  // With an image, the same runtime config also gives the vision profile and the static
  // layout; the StaticInputBuilder lays the prompt out.
  std::optional<ImageRun> image;
  if (!a.images.empty()) {
    if (!a.prompt) invalid_argument("run: --image goes with -p (its text holds the <|image|> placeholder)");
    const std::string text = a.chat ? chat_text(a) : *a.prompt;
    image = prepare_image_run(a.model, a.config_file, a.sets, a.max_seq, text, a.images);
  }
  auto ck = Checkpoint::open(a.model);
  const ModelConfig& config = ck->config();

  GenerateOptions g = generate_options(a.sampling, *ck);
  g.record_logits = a.dump_logits.has_value();
  if (settings.max_seq > config.text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(settings.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(config.text.max_position_embeddings));
  }
  apply_kernel_target(a.kernel_target);
  auto check_fits = [&](const std::vector<std::int64_t>& ids) {
    if (static_cast<std::int64_t>(ids.size()) > settings.max_seq - 1) {
      invalid_argument("run: the prompt has " + std::to_string(ids.size()) + " tokens but max_seq " +
                       std::to_string(settings.max_seq) + " leaves room for " + std::to_string(settings.max_seq - 1) +
                       " (one slot is kept for decoding); raise --max-seq");
    }
  };
  // Ids given on the command line are checked before the (slower) tokenizer load.
  std::vector<std::int64_t> prompt;
  if (a.prompt_ids) check_fits(prompt = prompt_ids(a, config, nullptr));
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(a.model);
  if (!a.prompt_ids && !image) check_fits(prompt = prompt_ids(a, config, tok.get()));
  std::unique_ptr<IncrementalDetokenizer> stop_text;  // its own stream: stop strings see every piece
  if (!g.stop_strings.empty()) {
    if (!tok) invalid_argument("--stop needs the checkpoint's tokenizer.json, which " + a.model + " does not have");
    stop_text = std::make_unique<IncrementalDetokenizer>(*tok);
    g.token_text = [&](std::int64_t t) { return stop_text->push(static_cast<int>(t)); };
  }

  const int threads = resolve_threads(a.threads);
  ThreadPool pool(threads);
  SubgraphProfile profile;
  if (image) profile = image->profile;
  profile.max_seq = settings.max_seq;
  profile.rope_sine = settings.rope_sine;
  profile.append_lengths = settings.prefill_buckets;
  CpuBackendOptions bo;
  bo.pool = &pool;
  bo.bf16_activations = !a.f32_activations;
  auto cpu = create_backend(a.backend, *ck, profile, bo);
  // With --record, every call goes through the recorder too (after the cpu backend computed it).
  ObservedBackend observed(*cpu);
  std::unique_ptr<inspect::Recorder> recorder;
  if (a.record) {
    recorder = std::make_unique<inspect::Recorder>(*a.record, inspect::record_setup(a.model, *cpu, bo));
    recorder->only_graphs(a.record_graphs);
    observed.add_observer(recorder->observer());
  }
  VisionTap backend(recorder ? static_cast<Backend&>(observed) : *cpu);  // times vision_prefill and keeps its rows
  RuntimeOptions ro;
  ro.mask_fill_value = settings.mask_fill_value;
  auto runtime = Runtime::create(backend, config, ck->layers(), ro);

  // Text when the checkpoint has a tokenizer (control tokens left out), else token ids.
  std::unique_ptr<IncrementalDetokenizer> out_text;
  if (tok) out_text = std::make_unique<IncrementalDetokenizer>(*tok, /*skip_special_tokens=*/true);
  bool first = true;
  std::string generated;  // with --json: the whole text, printed at the end
  if (a.json && !out_text) invalid_argument("run: --json needs the checkpoint's tokenizer.json, which " + a.model + " does not have");
  const TokenCallback stream = [&](std::int64_t token) {
    if (a.json) {
      generated += out_text->push(static_cast<int>(token));
    } else if (out_text) {
      std::cout << out_text->push(static_cast<int>(token));
    } else {
      std::cout << (first ? "" : " ") << token;
    }
    std::cout << std::flush;
    first = false;
    return true;
  };
  GenerationResult r;
  if (image) {
    const StaticInputs& in = image->inputs;
    PrefillInput pi;
    pi.llm_input_ids = in.llm_input_ids.as<std::int64_t>();
    pi.valid_length = in.length();
    pi.pixel_values = in.pixel_values->as<float>();
    r = runtime->generate(pi, g, stream);
  } else if (!settings.prefill_buckets.empty()) {
    r = runtime->generate_append(prompt, prompt, g, stream);  // the smallest prefill bucket that holds it
  } else {
    r = runtime->generate_tokens(prompt, g, stream);
  }
  if (a.json) {
    generated += out_text->finish();
    std::cout << reply_json(parse_gemma4_reply(generated)) << "\n" << std::flush;
  } else {
    if (out_text) std::cout << out_text->finish();
    std::cout << "\n" << std::flush;
  }
  if (recorder) {
    recorder->finish();
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(recorder->bytes_written()) / (1 << 20));
    std::cerr << "recorded " << recorder->calls().size() << " subgraph calls (" << mib << ") in " << recorder->dir()
              << "\n";
  }

  if (a.dump_logits) {
    write_logits_dump(*a.dump_logits, LogitsDump{r.prefill_logits, r.decode_logits, r.tokens, backend.vision_embeds(),
                                                 backend.vision_rows()});
  }
  const GenerationStats& s = r.stats;
  // The image encode runs inside prefill; it is reported on its own line and left out of the
  // prefill time and rate.
  const double encode = backend.vision_seconds(), text_prefill = s.prefill_seconds - encode;
  if (image) std::cerr << "image encode: 1 image in " << seconds(encode) << " (vision_prefill)\n";
  std::cerr << "prefill: " << s.prompt_tokens << " tokens in " << seconds(text_prefill) << " ("
            << rate(text_prefill > 0 ? static_cast<double>(s.prompt_tokens) / text_prefill : 0.0) << ")\n"
            << "decode: " << s.decode_steps << " tokens in " << seconds(s.decode_seconds) << " ("
            << rate(s.decode_tokens_per_second()) << ")\n"
            << "time to first token: " << seconds(s.time_to_first_token_seconds) << "\n"
            << "generated " << s.generated_tokens << " tokens; stopped: " << stop_reason_name(r.reason) << " ("
            << r.message << ")\n";
  print_backend_placement(*cpu);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "generate text with the cpu backend (greedy or sampled)");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("--config", a->config_file, "runtime config (YAML)");
  cmd->add_option("--set", a->sets, "override a runtime config key: key=value (repeatable)");
  cmd->add_option("-p,--prompt", a->prompt, "prompt text");
  cmd->add_option("--prompt-ids", a->prompt_ids, "prompt as comma-separated token ids (needs no tokenizer)");
  cmd->add_option("--messages", a->messages, "chat messages (JSON file)");
  cmd->add_flag("--chat", a->chat, "wrap the prompt in the chat format (the checkpoint's chat template)");
  cmd->add_option("--chat-template", a->chat_template, "a Jinja chat template file (overrides the checkpoint's)");
  cmd->add_option("--tools", a->tools, "JSON file with tool schemas for the chat template");
  cmd->add_option("--var", a->vars, "set a chat template variable: KEY=JSON (repeatable), e.g. enable_thinking=true");
  cmd->add_flag("--json", a->json,
                "print {\"text\", \"tool_calls\"} as one JSON line at the end instead of streaming (Gemma 4 tool calls parsed)");
  cmd->add_option("--image", a->images, "image file (JPEG or PNG); one: the static profile holds one image span");
  add_sampling_flags(*cmd, a->sampling);
  cmd->add_option("--max-seq", a->max_seq, "static sequence length: prompt + generated tokens + 1");
  cmd->add_option("--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  cmd->add_flag("--f32-activations", a->f32_activations,
                "keep prefill/vision activations f32 on bf16 weights (default: rounded to bf16 as transformers "
                "does, which lets bf16 dot-product instructions run)");
  add_kernel_target_option(*cmd, a->kernel_target);
  add_backend_options(*cmd, a->backend);
  cmd->add_option("--dump-logits", a->dump_logits, "write prefill/decode logits and tokens (safetensors)");
  cmd->add_option("--record", a->record,
                  "write every subgraph call's inputs and outputs to this new or empty directory (for replay)");
  cmd->add_option("--record-graph", a->record_graphs,
                  "with --record: record only this graph, or the graphs it is a prefix of up to '_' (repeatable)");
  add_profile_option(*cmd, a->profile);
  cmd->callback([a] {
    a->sets = with_profile(a->sets, a->profile);
    run_command(*a);
  });
}

}  // namespace staticlm::cli
