// staticlm run -m DIR [--config runtime.yaml] [--set k=v]... (-p PROMPT | --prompt-ids 2,105,...
// | --messages F) [--chat] [--image F]... [-n N] [--max-seq S] [--temp T] [--top-k K] [--top-p P]
// [--min-p P] [--repetition-penalty R] [--seed S] [--threads N] [--stop STR]...
// [--dump-logits OUT.safetensors] [--record DIR [--record-graph NAME]...]
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
// with the Gemma 4 tool calls (<|tool_call>call:NAME{...}<tool_call|>) parsed out of the text;
// --tool-choice required / NAME forces such calls of the --tools (text/tool_call_grammar.h), none
// bans them. `--temp 0`
// is greedy; sampling defaults come from generation_config.json (greedy without one). Stops on
// any EOS id of the checkpoint, a stop string, -n tokens, or when the KV cache is full (a clean
// stop with a message, exit 0). Ctrl-C stops the reply (also part-way through a long prompt):
// what was generated is printed and written as usual, then exit 130, as llama-cli.
//
// --record DIR writes every subgraph call's inputs and outputs (one safetensors file per call)
// and an index.json to DIR, a new or empty directory, for `staticlm replay`
// (docs/record-replay.md); --record-graph limits it to some graphs. What is generated is the same.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "api/engine.h"
#include "api/generate_params.h"
#include "backend_option.h"
#include "commands.h"
#include "interrupt.h"
#include "llama_cpp_flags.h"
#include "profile_option.h"
#include "kernel_target_option.h"
#include "prompt_source.h"
#include "runtime/generation_defaults.h"
#include "runtime/runtime_config.h"
#include "sampling_flags.h"
#include "staticlm/model.h"
#include "text/chat_render.h"
#include "text/tool_call_grammar.h"
#include "text/tool_calls.h"
#include "vision/image_decode.h"
#include "template_var_options.h"
#include "threads_option.h"

namespace staticlm::cli {

namespace {

struct RunArgs {
  std::string model;
  std::optional<std::string> config_file;
  std::vector<std::string> sets;
  std::optional<std::string> prompt, prompt_file, prompt_ids, messages, tools, system;
  std::optional<std::string> system_file;  // -sysf: the system message's file (its text is not escape-processed)
  std::string chat_template;
  std::optional<std::string> tool_choice;  // auto, none, required or a function's name
  std::vector<std::string> vars;
  bool chat = false, json = false;
  bool special = false;  // llama.cpp's -sp: control tokens printed
  bool verbose_prompt = false, no_perf = false;  // llama.cpp's --verbose-prompt, --no-perf
  std::vector<std::string> images;
  std::optional<std::int64_t> max_seq;
  SamplingFlags sampling;  // -n, --temp, --top-k, --top-p, --min-p, --repetition-penalty, --seed, --stop
  int threads = 0;  // 0: one per hardware thread
  bool f32_activations = false;
  bool resident_weights = false;
  std::optional<std::string> kernel_target;
  std::optional<std::string> dump_logits;
  std::optional<std::string> record;
  std::vector<std::string> record_graphs;
  BackendChoice backend;
  std::optional<std::string> profile;  // --profile: prepended to sets
};

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

// The chat prompt of --messages or -p --chat: the checkpoint's chat template (or --chat-template),
// else the built-in Gemma 4 format.
// images receives the prompt's image files: --image, or for --messages its image parts (a part
// naming no file takes the next --image).
std::string chat_text(const RunArgs& a, std::vector<std::string>& images) {
  static const RuntimeConfig kDefaults;  // a named object: GCC 12 warns falsely on a temporary's strings here
  return resolve_prompt(
      PromptSource{a.prompt, a.messages, a.chat, a.images, a.model, a.chat_template, a.tools, a.vars, a.system}, kDefaults,
      images);
}

// The prompt as token ids: --prompt-ids as given; -p as given, or wrapped in the chat format
// with --chat; --messages always in the chat format.
std::vector<std::int64_t> prompt_ids(const RunArgs& a, const api::Model& model, const std::string& text,
                                     std::int64_t max_seq) {
  if (a.prompt_ids) {
    if (a.chat) invalid_argument("run: --chat goes with -p, not --prompt-ids");
    return parse_token_ids(*a.prompt_ids, model.info().vocab_size, "--prompt-ids");
  }
  const std::optional<api::Tokenizer> tok = model.tokenizer();
  if (!tok) {
    invalid_argument("run: " + std::string(a.prompt ? "-p" : "--messages") + " needs the checkpoint's tokenizer.json, " +
                     "which " + a.model + " does not have; give --prompt-ids instead");
  }
  // A prompt that cannot fit is refused without encoding all of it.
  api::Tokenizer::TokenCount count;
  const std::optional<std::vector<std::int64_t>> ids = tok->encode_at_most(text, max_seq - 1, false, &count);
  if (!ids) {
    invalid_argument("run: the prompt has " + std::string(count.exact ? "" : "at least ") + std::to_string(count.tokens) +
                     " tokens but max_seq " +
                     std::to_string(max_seq) + " leaves room for " + std::to_string(max_seq - 1) +
                     " (one slot is kept for decoding); raise --max-seq");
  }
  if (ids->empty()) invalid_argument("run: the prompt is empty");
  return *ids;
}

void check_args(const RunArgs& a) {
  const int sources = (a.prompt ? 1 : 0) + (a.prompt_file ? 1 : 0) + (a.prompt_ids ? 1 : 0) + (a.messages ? 1 : 0);
  if (sources != 1) invalid_argument("run: give exactly one of -p/--prompt, -f/--file, --prompt-ids, --messages");
  check_prompt_utf8(a.prompt);
  if (a.system && !a.prompt && !a.prompt_file) {
    invalid_argument("run: --system-prompt goes with -p or -f (a --messages file holds its own system message)");
  }
  if (!a.record && !a.record_graphs.empty()) invalid_argument("run: --record-graph goes with --record DIR");
  check_backend_choice(a.backend);  // before the (slow) checkpoint load
  if ((a.tools || !a.vars.empty() || !a.chat_template.empty()) && !a.messages && !a.chat) {
    invalid_argument("run: --tools, --var and --chat-template go with --messages or --chat");
  }
  if (a.tool_choice && !a.tools) invalid_argument("run: --tool-choice goes with --tools");
  if (a.max_seq && *a.max_seq < 2) invalid_argument("--max-seq " + std::to_string(*a.max_seq) + ": must be at least 2");
  if (!a.images.empty() && a.prompt_ids) {
    invalid_argument("run: --image goes with -p or --messages (their text holds the <|image|> placeholder)");
  }
}

// The static layout holds one image span.
void check_image_count(const std::vector<std::string>& images) {
  if (images.size() > 1) {
    invalid_argument("run: " + std::to_string(images.size()) +
                     " images given, but the static profile holds one image span: give one --image");
  }
}

void print_stats(const api::GenerationResult& r, bool image) {
  const api::GenerationStats& s = r.stats;
  if (image) std::cerr << "image encode: 1 image in " << seconds(s.image_encode_seconds) << " (vision_prefill)\n";
  std::cerr << "prefill: " << s.prompt_tokens << " tokens in " << seconds(s.prefill_seconds) << " ("
            << rate(s.prefill_tokens_per_second()) << ")\n"
            << "decode: " << s.decode_steps << " tokens in " << seconds(s.decode_seconds) << " ("
            << rate(s.decode_tokens_per_second()) << ")\n"
            << "time to first token: " << seconds(s.time_to_first_token_seconds) << "\n"
            << "generated " << s.generated_tokens << " tokens; stopped: " << r.stop_reason << " (" << r.message << ")\n";
}

// llama.cpp's --verbose-prompt: the prompt's tokens, one "ID -> 'piece'" line each, on stderr.
void print_prompt_tokens(const std::vector<std::int64_t>& ids, const std::optional<api::Tokenizer>& tok) {
  std::cerr << "prompt: " << ids.size() << " tokens\n";
  for (const std::int64_t id : ids) {
    char head[32];
    std::snprintf(head, sizeof head, "%8lld -> '", static_cast<long long>(id));
    std::cerr << head << (tok ? tok->decode({id}) : std::string()) << "'\n";
  }
}

// A thin adapter over the library (include/staticlm/session.h): flags in, stream and statistics out.
void run_command(RunArgs& a) {
  if (a.sampling.escape) {  // llama.cpp's -e, before the checks (\xHH may make bytes that are not UTF-8)
    if (a.prompt) a.prompt = process_escapes(*a.prompt);
    if (a.system) a.system = process_escapes(*a.system);
  }
  if (a.system_file) {
    if (a.system) invalid_argument("run: give one of --system-prompt and --system-prompt-file");
    a.system = read_prompt_file(*a.system_file);  // as written: -e applies to command-line text only
  }
  check_args(a);
  if (a.system) a.chat = true;  // a system message is a chat turn
  if (a.prompt_file) {  // -f: the file's text is the prompt, as llama.cpp's -f takes it
    a.prompt = read_prompt_file(*a.prompt_file);
    check_prompt_utf8(a.prompt, a.prompt_file->c_str());
    a.prompt_file.reset();
  }
  const int threads = resolve_threads(a.threads);
  // Everything that needs no checkpoint is checked first: a bad flag or file is refused in a
  // moment, not after the load (the tokenizer alone takes ~0.5 s).
  // The prompt text and its images (--messages may name image files in its parts).
  std::vector<std::string> images = a.images;
  std::string text;
  if (a.messages || a.chat) {
    text = chat_text(a, images);
  } else if (a.prompt) {
    text = *a.prompt;
  }
  check_image_count(images);
  for (const std::string& image : images) check_image_file(image);
  if (a.prompt_ids) parse_token_ids(*a.prompt_ids, INT64_MAX, "--prompt-ids");  // the ids' range once the model is open
  api::GenerateParams params = generate_params(a.sampling);
  // serve's tool_choice: forced calls by a grammar of the tools, or the call-opening token banned.
  ToolChoiceConstraint tool_choice;
  if (a.tool_choice) {
    // With thinking on (--var enable_thinking=true) a thought may come before the calls.
    tool_choice = tool_choice_constraint(parse_tools_json(read_file(*a.tools), *a.tools), tool_choice_from_text(*a.tool_choice),
                                         true, "--tool-choice", thinking_enabled(a.vars));
    if (!tool_choice.grammar.empty() && (!params.grammar.empty() || !params.json_schema.empty())) {
      invalid_argument("--tool-choice " + *a.tool_choice + " and --grammar / --json-schema: give one constraint");
    }
    if (!tool_choice.grammar.empty()) params.grammar = tool_choice.grammar;
  }
  // With thinking on, a JSON reply may follow one thought (as serve's response_format).
  params.thought_first = thinking_enabled(a.vars);
  params.special = a.special;
  if (a.special && a.json) invalid_argument("run: --special prints the control tokens and --json parses the reply: give one");
  api::check_generate_params(params);
  if (a.dump_logits) {
    params.dump_logits = *a.dump_logits;
    check_output_file(*a.dump_logits);
  }
  apply_kernel_target(a.kernel_target);
  api::SessionOptions so;
  so.max_seq = a.max_seq.value_or(0);
  so.threads = threads;
  so.config_file = a.config_file.value_or("");
  so.sets = a.sets;
  so.f32_activations = a.f32_activations;
  so.resident_weights = a.resident_weights;
  so.record_dir = a.record.value_or("");
  so.record_graphs = a.record_graphs;
  so.backend = a.backend.backend;
  so.fallback = a.backend.fallback;
  api::session_config(so);

  const api::Model model = api::Model::open(a.model);
  if (a.max_seq && *a.max_seq > model.info().max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(*a.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(model.info().max_position_embeddings));
  }
  if (!images.empty() && !model.info().has_vision) {
    invalid_argument("run: --image needs a model with a vision tower; " + a.model + " is text-only");
  }
  if (!params.stop.empty() && !model.info().has_tokenizer) {
    invalid_argument("--stop needs the checkpoint's tokenizer.json, which " + a.model + " does not have");
  }
  if (a.json && !model.info().has_tokenizer) {
    invalid_argument("run: --json needs the checkpoint's tokenizer.json, which " + a.model + " does not have");
  }
  if (tool_choice.ban_call_open) {
    const std::int64_t open = model.tokenizer() ? model.tokenizer()->token_to_id(std::string(kToolCallOpen)) : -1;
    if (open >= 0) params.logit_bias.emplace_back(open, -INFINITY);
  }
  const std::unique_ptr<api::Session> session = model.session(so);

  api::Prompt prompt;
  if (!images.empty()) {
    prompt.text = text;  // laid out by the runtime config's vision profile
    prompt.images = images;
  } else {
    prompt.ids = prompt_ids(a, model, text, session->max_seq());
    if (static_cast<std::int64_t>(prompt.ids.size()) > session->max_seq() - 1) {
      invalid_argument("run: the prompt has " + std::to_string(prompt.ids.size()) + " tokens but max_seq " +
                       std::to_string(session->max_seq()) + " leaves room for " + std::to_string(session->max_seq() - 1) +
                       " (one slot is kept for decoding); raise --max-seq");
    }
    if (a.verbose_prompt) print_prompt_tokens(prompt.ids, model.tokenizer());
  }
  // Text when the checkpoint has a tokenizer (control tokens left out unless --special), else token ids.
  const bool ids_only = !model.info().has_tokenizer;
  bool first = true;
  // Ctrl-C (llama-cli's habit): the reply stops there, what was generated is printed and written
  // as usual with the statistics, and the command exits 130; a second Ctrl-C ends it at once.
  catch_interrupts();
  params.should_stop = interrupt_requested();
  api::GenerationResult r;
  bool interrupted = false;
  {
    const InterruptibleCall call;
    r = session->generate(prompt, params, [&](std::int64_t token, std::string_view text) {
      if (a.json) return true;  // printed whole at the end
      if (ids_only) {
        std::cout << (first ? "" : " ") << token;
      } else {
        std::cout << text;
      }
      std::cout << std::flush;
      first = false;
      return true;
    });
    interrupted = call.requested() && r.stop_reason == "stopped by caller";
  }
  if (a.json) {
    std::cout << reply_json(parse_gemma4_reply(r.text)) << "\n" << std::flush;
  } else {
    std::cout << r.text_tail << "\n" << std::flush;
  }
  if (a.record) {
    char mib[32];
    std::snprintf(mib, sizeof mib, "%.1f MiB", static_cast<double>(r.recorded_bytes) / (1 << 20));
    std::cerr << "recorded " << r.recorded_calls << " subgraph calls (" << mib << ") in " << *a.record << "\n";
  }
  if (!a.no_perf) print_stats(r, !images.empty());
  if (const std::string where = session->backend_placement(); !where.empty()) std::cerr << where << "\n";
  if (interrupted) {
    std::cerr << (r.tokens.empty() ? "[interrupted during the prompt]" : "[interrupted]") << "\n";
    throw CommandExit{130};
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "generate text with the cpu backend (greedy or sampled)");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("--config", a->config_file, "runtime config (YAML)");
  cmd->add_option("--set", a->sets, "override a runtime config key: key=value (repeatable)");
  cmd->add_option("-p,--prompt", a->prompt, "prompt text");
  cmd->add_option("-f,--file", a->prompt_file, "file whose text is the prompt (without its last newline, as llama.cpp's -f)");
  cmd->add_option("--prompt-ids", a->prompt_ids, "prompt as comma-separated token ids (needs no tokenizer)");
  cmd->add_option("--messages", a->messages, "chat messages (JSON file)");
  cmd->add_flag("--chat,--single-turn", a->chat,
                "wrap the prompt in the chat format (the checkpoint's chat template); llama-cli's -st, one turn");
  cmd->add_option("--system,--system-prompt", a->system,
                  "a system message before the prompt, in the chat format (implies --chat; llama.cpp's -sys)");
  cmd->add_option("--system-prompt-file", a->system_file,
                  "the system message from a file, without its last newline (llama.cpp's -sysf; read as written, no escapes)");
  cmd->add_option("--chat-template,--chat-template-file", a->chat_template,
                  "a Jinja chat template: a file, or the template itself (text holding {{ or {%), as llama.cpp's "
                  "--chat-template takes it; overrides the checkpoint's");
  cmd->add_flag("--jinja")->description("accepted for llama.cpp's command lines: chat templates are always rendered as Jinja");
  cmd->add_option("--tools", a->tools, "JSON file with tool schemas for the chat template");
  cmd->add_option("--tool-choice", a->tool_choice,
                  "auto (the model decides), none (no call), required (one or more calls of the --tools), or a "
                  "function's name (calls of it), as serve's tool_choice");
  add_template_var_options(*cmd, a->vars);
  cmd->add_flag("--json", a->json,
                "print {\"text\", \"tool_calls\"} as one JSON line at the end instead of streaming (Gemma 4 tool calls parsed)");
  cmd->add_option("--image", a->images, "image file (JPEG or PNG); one: the static profile holds one image span");
  add_sampling_flags(*cmd, a->sampling);
  cmd->add_flag("--special", a->special, "print the control tokens and the end token too (llama.cpp's -sp)");
  add_llama_cpp_tuning_flags(*cmd);
  add_llama_cpp_refused_flags(*cmd);
  add_llama_cpp_mode_flags(*cmd, /*conversation=*/false);
  cmd->add_flag("--verbose-prompt", a->verbose_prompt, "print the prompt's tokens (ID -> 'piece') on stderr before generating");
  cmd->add_flag("--no-perf,--log-disable", a->no_perf, "print no statistics on stderr after the reply (llama.cpp's --no-perf)");
  cmd->add_option("-c,--max-seq,--ctx-size", a->max_seq, "static sequence length: prompt + generated tokens + 1")
      ->check(max_seq_range());
  cmd->add_option("-t,--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  cmd->add_flag("--f32-activations", a->f32_activations,
                "keep prefill/vision activations f32 on bf16 weights (default: rounded to bf16 as transformers "
                "does, which lets bf16 dot-product instructions run)");
  add_kernel_target_option(*cmd, a->kernel_target);
  cmd->add_option("--dump-logits", a->dump_logits, "write prefill/decode logits and tokens (safetensors)");
  cmd->add_option("--record", a->record,
                  "write every subgraph call's inputs and outputs to this new or empty directory (for replay)");
  cmd->add_option("--record-graph", a->record_graphs,
                  "with --record: record only this graph, or the graphs it is a prefix of up to '_' (repeatable)");
  add_backend_options(*cmd, a->backend);
  add_mmap_flags(*cmd, a->resident_weights);
  add_profile_option(*cmd, a->profile);
  cmd->callback([a] {
    a->sets = with_profile(a->sets, a->profile);
    run_command(*a);
  });
}

}  // namespace staticlm::cli
