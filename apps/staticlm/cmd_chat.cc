// staticlm chat -m DIR [--config F] [--set k=v]... [--system S] [--image F] [--max-seq S]
// [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--seed S]
// [--stop STR]... [--threads N] [--backend cpu|plugin:PATH.so[:k=v,...]] [--fallback none|cpu]
// [--jinja] [--chat-template F|TEXT] [--var KEY=JSON]...
//
// A thin adapter over the library's Chat (include/staticlm/chat.h): flags in, the REPL loop and
// printing here; the runtime, back end, thread pool and vision graphs are the library's.
//
// A multi-turn chat: each line read from stdin is a user turn; the reply streams to stdout,
// followed by a newline; statistics go to stderr, one line per turn saying how many tokens were
// prefilled and how many came from the cache. Only the new tokens of a turn are prefilled
// (append-prefill with the runtime config's prefill_buckets, default 16, 64, 256). When a turn
// does not fit, context_overflow (runtime config / --set) decides: "error" (default) refuses
// it, "truncate" drops the oldest whole turns and goes on. --jinja (the checkpoint's template) or
// --chat-template lays each turn out with a Jinja chat template instead of the built-in Gemma 4
// format: the whole conversation is rendered again and its common prefix with the cache reused.
//
// Commands: /reset (forget the turns), /save F and /load F (tokens + KV cache; a file from
// another checkpoint, max_seq or profile is refused), /image F (an image for the next turn,
// which must be the first: the static profile fixes the image span's positions; needs --image
// at start, which sets up the vision graphs), /stats, /quit. On a terminal a "> " prompt is
// shown and a refused turn leaves the chat running; reading a script from a pipe, an error
// ends the chat with "error: ..." and exit 2. On a terminal Ctrl-C during a reply stops it (also
// part-way through the turn's prompt, which is then not kept) and the chat goes on, as in
// llama-cli; at the "> " prompt it ends the program as before.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/engine.h"
#include "api/generate_params.h"
#include "backend_option.h"
#include "base/error.h"
#include "commands.h"
#include "interrupt.h"
#include "llama_cpp_flags.h"
#include "profile_option.h"
#include "prompt_source.h"
#include "sampling_flags.h"
#include "staticlm/model.h"
#include "text/chat_render.h"
#include "text/thought_split.h"
#include "template_var_options.h"
#include "threads_option.h"
#include "vision/image_decode.h"

namespace staticlm::cli {

namespace {

struct ChatArgs {
  std::string model;
  std::optional<std::string> config_file, system, image;
  // llama-cli's conversation mode: -p (or -f) is the first user turn, answered before stdin is
  // read; -st ends the chat after one turn.
  std::optional<std::string> prompt, prompt_file, system_file;
  bool single_turn = false;
  std::vector<std::string> sets;
  bool jinja = false;
  bool no_perf = false;  // llama.cpp's --no-perf: no statistics on stderr
  // llama.cpp's --reasoning-format: none prints a thought as the model wrote it (markers and
  // all); the others print it on stderr, apart from the answer on stdout.
  std::string reasoning_format = "auto";
  std::string chat_template;
  std::vector<std::string> vars;
  std::optional<std::string> profile;  // --profile: prepended to sets
  std::optional<std::int64_t> max_seq;
  SamplingFlags sampling;
  int threads = 0;
  bool resident_weights = false;
  BackendChoice backend;
};

std::string fixed(double v, const char* unit) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, unit);
  return buf;
}

// Everything that can refuse the flags runs before the first line is read.
std::unique_ptr<api::Chat> open_chat(const ChatArgs& a, const api::GenerateParams& params) {
  std::optional<std::string> system = a.system;
  if (system && a.sampling.escape) system = process_escapes(*system);  // llama.cpp's -e
  if (a.system_file) {
    if (system) invalid_argument("chat: give one of --system-prompt and --system-prompt-file");
    system = read_prompt_file(*a.system_file);  // as written: -e applies to command-line text only
  }
  if (a.prompt && a.prompt_file) invalid_argument("chat: give one of -p/--prompt and -f/--file (the first turn)");
  check_prompt_utf8(system, "--system");
  check_backend_choice(a.backend);  // before the (slow) checkpoint load
  const int threads = resolve_threads(a.threads);
  api::SessionOptions so;
  so.threads = threads;
  so.config_file = a.config_file.value_or("");
  so.sets = a.sets;
  // As a runtime config key: the config's own checks name a bad value.
  if (a.max_seq) so.sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  so.backend = a.backend.backend;
  so.fallback = a.backend.fallback;
  so.resident_weights = a.resident_weights;
  api::session_config(so);
  api::check_generate_params(params);
  if (a.image) check_image_file(*a.image);

  const api::Model model = api::Model::open(a.model);
  if (a.max_seq && *a.max_seq > model.info().max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(*a.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(model.info().max_position_embeddings));
  }
  if (a.image && !model.info().has_vision) {
    invalid_argument("chat: --image needs a model with a vision tower; " + a.model + " is text-only");
  }
  api::ChatOptions co;
  co.system = system.value_or("");
  co.vision = a.image.has_value();  // the vision graphs, for the runtime config's vision profile
  co.jinja = a.jinja;
  co.chat_template = a.chat_template;
  co.vars = a.vars;
  if (!a.vars.empty() && !a.jinja && a.chat_template.empty()) {
    invalid_argument("chat: --var sets a chat template variable: it needs --jinja or --chat-template");
  }
  auto chat = model.chat(so, co);
  chat->check(params);
  if (a.image) chat->check_image(*a.image);  // refuse a bad file before the chat starts
  return chat;
}

void print_turn(std::int64_t turn_no, const api::TurnResult& t, const api::Chat& chat) {
  const api::GenerationStats& gs = t.result.stats;
  std::cerr << "turn " << turn_no << ": prefilled " << t.prefilled_tokens << " tokens, reused " << t.reused_tokens
            << " from the cache";
  if (t.dropped_turns > 0) std::cerr << ", dropped " << t.dropped_turns << " oldest turns";
  std::cerr << "; generated " << gs.generated_tokens << " tokens (" << fixed(gs.decode_tokens_per_second(), "tok/s")
            << "); stopped: " << t.result.stop_reason << "; context " << t.context_tokens << "/" << chat.max_seq() - 1
            << "\n";
}

// A line of stdin is one turn. Read with a limit: a 300 MB line without a newline was read and
// tokenized whole (5 GB) before max_seq refused it.
constexpr std::size_t kMaxTurnLineBytes = std::size_t{8} << 20;

// The next line without its newline; false at the end of input with nothing read. A line past
// the limit is skipped to its end and `too_long` set.
bool read_turn_line(std::istream& in, std::string& line, bool& too_long) {
  line.clear();
  too_long = false;
  bool any = false;
  for (int c = in.get(); c != std::char_traits<char>::eof(); c = in.get()) {
    any = true;
    if (c == '\n') return true;
    if (too_long) continue;
    if (line.size() < kMaxTurnLineBytes) {
      line.push_back(static_cast<char>(c));
    } else {
      too_long = true;
      std::string().swap(line);
    }
  }
  return any;
}

void chat_command(const ChatArgs& a) {
  api::GenerateParams params = generate_params(a.sampling);
  const std::unique_ptr<api::Chat> chat = open_chat(a, params);
  if (const std::string where = chat->backend_placement(); !where.empty()) std::cerr << where << "\n";
  if (a.jinja || !a.chat_template.empty()) {
    // Which template lays the turns out (the checkpoint's file, tokenizer_config.json's, or the flag's).
    if (const auto t = find_chat_template(a.model, a.chat_template)) std::cerr << "chat template: " << t->name << "\n";
  }
  std::optional<std::string> next_image = a.image;

  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) {
    catch_interrupts();
    params.should_stop = interrupt_requested();
  }
  // A refused turn or command: on a terminal the chat goes on, from a script it ends (exit 2).
  auto report = [&](const char* what) {
    if (!interactive) return false;
    std::cerr << "error: " << what << "\n";
    return true;
  };
  std::int64_t turn_no = 0, prefilled_total = 0, reused_total = 0;
  std::string line;
  std::int64_t line_no = 0;
  std::optional<std::string> first = a.prompt_file ? std::optional(read_prompt_file(*a.prompt_file)) : a.prompt;
  if (first && a.sampling.escape && !a.prompt_file) first = process_escapes(*first);
  for (;;) {
    if (a.single_turn && turn_no > 0) break;
    bool too_long = false;
    if (first) {
      line = std::move(*first);
      first.reset();
      if (line.empty()) continue;
    } else {
      if (interactive) std::cerr << "> " << std::flush;
      if (!read_turn_line(std::cin, line, too_long)) break;
      ++line_no;
      if (line.empty() && !too_long) continue;
    }
    try {
      if (too_long) {
        invalid_argument("stdin line " + std::to_string(line_no) + ": longer than " + std::to_string(kMaxTurnLineBytes) +
                         " bytes (the limit)");
      }
      // The line is named: from a script, "offset 14" alone does not say which one.
      check_prompt_utf8(line, line_no == 0 ? (a.prompt_file ? "-f" : "--prompt") : ("stdin line " + std::to_string(line_no)).c_str());
      if (line[0] == '/' && line_no > 0) {  // commands come from stdin; a -p / -f first turn is text
        const std::size_t sp = line.find(' ');
        const std::string cmd = line.substr(0, sp), arg = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (cmd == "/quit" || cmd == "/exit") break;
        if (cmd == "/reset") {
          chat->reset();
          std::cerr << "conversation reset\n";
        } else if (cmd == "/save" && !arg.empty()) {
          chat->save(arg);
          std::cerr << "saved " << chat->context_tokens() << " tokens (" << chat->past_len() << " in the cache) to "
                    << arg << "\n";
        } else if (cmd == "/load" && !arg.empty()) {
          chat->load(arg);
          std::cerr << "loaded " << chat->context_tokens() << " tokens, " << chat->turns() << " turns from " << arg
                    << "\n";
        } else if (cmd == "/image" && !arg.empty()) {
          if (!chat->vision()) invalid_argument("chat: /image needs the vision graphs: start the chat with --image");
          if (!chat->empty()) {
            invalid_argument("chat: /image: an image can only come with the first turn (the static profile fixes the "
                             "image span's positions); /reset first");
          }
          chat->check_image(arg);
          next_image = arg;
          std::cerr << "the next turn carries " << arg << "\n";
        } else if (cmd == "/stats") {
          std::cerr << "turns " << chat->turns() << ", context " << chat->context_tokens() << " tokens, cache "
                    << chat->past_len() << "/" << chat->max_seq() - 1 << ", prefilled " << prefilled_total
                    << " tokens in all, reused " << reused_total << " from the cache\n";
        } else if ((cmd == "/save" || cmd == "/load" || cmd == "/image") && arg.empty()) {
          invalid_argument("chat: " + cmd + " needs a file: " + cmd + " F");
        } else {
          invalid_argument("chat: unknown command '" + line + "'; commands: /reset, /save F, /load F, /image F, "
                           "/stats, /quit");
        }
        continue;
      }
      // A thought (Gemma 4's thinking) goes to stderr as "[thinking] ..." on its own line, the
      // answer to stdout; with --reasoning-format none both go to stdout as written.
      const bool raw = a.reasoning_format == "none";
      ThoughtSplit split;
      bool thinking = false;  // a "[thinking] " line is open on stderr
      const auto show = [&](const ThoughtSplit::Parts& parts) {
        if (!parts.thought.empty()) {
          if (!thinking) std::cerr << "[thinking] ";
          thinking = true;
          std::cerr << parts.thought << std::flush;
        }
        if (thinking && !split.in_thought()) {
          std::cerr << "\n" << std::flush;
          thinking = false;
        }
        std::cout << parts.answer << std::flush;
      };
      const api::TokenCallback stream = [&](std::int64_t, std::string_view text) {
        if (raw) {
          std::cout << text << std::flush;
        } else {
          show(split.push(text));
        }
        return true;
      };
      api::TurnResult t;
      bool interrupted = false;
      {
        const InterruptibleCall call;
        const bool with_image = next_image && chat->empty();
        t = with_image ? chat->say_with_image(line, *next_image, params, stream) : chat->say(line, params, stream);
        if (with_image && !t.result.tokens.empty()) next_image.reset();  // a turn given up keeps it for the retry
        // (A Ctrl-C after the reply's last token changed nothing: no note then.)
        interrupted = call.requested() && t.result.stop_reason == "stopped by caller";
      }
      if (interrupted && t.result.tokens.empty()) {
        std::cerr << "[interrupted during the prompt: the turn is not kept]\n";
        if (a.single_turn) break;
        continue;
      }
      if (raw) {
        std::cout << t.result.text_tail;
      } else {
        show(split.push(t.result.text_tail));
        show(split.finish());
        if (thinking) std::cerr << "\n";
      }
      std::cout << "\n" << std::flush;
      if (interrupted) std::cerr << "[interrupted]\n";
      ++turn_no;
      prefilled_total += t.prefilled_tokens;
      reused_total += t.reused_tokens;
      if (!a.no_perf) print_turn(turn_no, t, *chat);
    } catch (const Error& e) {
      if (!report(e.what())) throw;
    } catch (const api::Error& e) {
      if (!report(e.what())) throw;
    }
  }
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto a = std::make_shared<ChatArgs>();
  auto* cmd = app.add_subcommand("chat", "multi-turn chat that prefills only each turn's new tokens (reads stdin)");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("--config", a->config_file, "runtime config (YAML)");
  cmd->add_option("--set", a->sets, "override a runtime config key: key=value (repeatable), e.g. context_overflow=truncate");
  cmd->add_option("--system,--system-prompt", a->system, "system prompt");
  cmd->add_option("--system-prompt-file", a->system_file,
                  "the system prompt from a file, without its last newline (llama.cpp's -sysf; read as written, no escapes)");
  cmd->add_option("--image", a->image, "image file for the first turn (JPEG or PNG)");
  cmd->add_option("-p,--prompt", a->prompt, "the first user turn, answered before stdin is read (llama-cli's -p in conversation mode)");
  cmd->add_option("-f,--file", a->prompt_file, "the first user turn from a file, without its last newline");
  cmd->add_flag("--single-turn", a->single_turn, "end after one turn: the --prompt, else the first stdin line (llama-cli's -st)");
  cmd->add_option("-c,--max-seq,--ctx-size", a->max_seq, "static sequence length: the whole conversation's context + 1")
      ->check(max_seq_range());
  cmd->add_option("-t,--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  add_backend_options(*cmd, a->backend);
  add_mmap_flags(*cmd, a->resident_weights);
  add_sampling_flags(*cmd, a->sampling);
  add_llama_cpp_tuning_flags(*cmd);
  add_llama_cpp_refused_flags(*cmd);
  add_llama_cpp_mode_flags(*cmd, /*conversation=*/true);
  cmd->add_flag("--no-perf,--log-disable", a->no_perf, "print no statistics on stderr after each turn (llama.cpp's --no-perf)");
  cmd->add_option("--reasoning-format", a->reasoning_format,
                  "a reply's thought (Gemma 4's thinking): auto (the default), deepseek or deepseek-legacy print it on "
                  "stderr as '[thinking] ...', apart from the answer on stdout; none prints it as written")
      ->check(CLI::IsMember({"none", "auto", "deepseek", "deepseek-legacy"}));
  add_profile_option(*cmd, a->profile);
  cmd->add_flag("--jinja", a->jinja,
                "lay turns out with the checkpoint's Jinja chat template (re-rendered whole each turn, the common "
                "prefix reused from the cache) instead of the built-in Gemma 4 format");
  cmd->add_option("--chat-template,--chat-template-file", a->chat_template,
                  "a Jinja chat template for the turns: a file, or the template itself (text holding {{ or {%), as "
                  "llama.cpp's --chat-template takes it; implies --jinja");
  add_template_var_options(*cmd, a->vars);
  cmd->callback([a] {
    a->sets = with_profile(a->sets, a->profile);
    chat_command(*a);
  });
}

}  // namespace staticlm::cli
