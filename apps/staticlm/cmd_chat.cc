// staticlm chat -m DIR [--config F] [--set k=v]... [--system S] [--image F] [--max-seq S]
// [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repetition-penalty R] [--seed S]
// [--stop STR]... [--threads N] [--backend cpu|plugin:PATH.so[:k=v,...]] [--fallback none|cpu]
//
// A multi-turn chat (runtime/conversation.h): each line read from stdin is a user turn; the
// reply streams to stdout, followed by a newline; statistics go to stderr, one line per turn
// saying how many tokens were prefilled and how many came from the cache. Only the new tokens
// of a turn are prefilled (append-prefill with the runtime config's prefill_buckets, default 16,
// 64, 256). When a turn does not fit, context_overflow (runtime config / --set) decides:
// "error" (default) refuses it, "truncate" drops the oldest whole turns and goes on.
//
// Commands: /reset (forget the turns), /save F and /load F (tokens + KV cache; a file from
// another checkpoint, max_seq or profile is refused), /image F (an image for the next turn,
// which must be the first: the static profile fixes the image span's positions; needs --image
// at start, which sets up the vision graphs), /stats, /quit. On a terminal a "> " prompt is
// shown and a refused turn leaves the chat running; reading a script from a pipe, an error
// ends the chat with "error: ..." and exit 2.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
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
#include "base/sha256.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "profile_option.h"
#include "prompt_source.h"
#include "model/checkpoint.h"
#include "runtime/conversation.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "sampling_flags.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "vision/image_decode.h"

namespace staticlm::cli {

namespace {

struct ChatArgs {
  std::string model;
  std::optional<std::string> config_file, system, image;
  std::vector<std::string> sets;
  std::optional<std::string> profile;  // --profile: prepended to sets
  std::optional<std::int64_t> max_seq;
  SamplingFlags sampling;
  int threads = 0;
  BackendChoice backend;
};

std::string fixed(double v, const char* unit) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, unit);
  return buf;
}

// What a saved conversation must match: the checkpoint (by directory name and config.json),
// max_seq and the vision profile.
std::string identity(const std::string& model_dir, std::int64_t max_seq, const std::string& profile) {
  const std::string name = std::filesystem::path(model_dir).lexically_normal().filename().string();
  const std::string sha = sha256_hex(read_file(path_join(model_dir, "config.json")));
  return "checkpoint '" + (name.empty() ? model_dir : name) + "' (config.json sha256 " + sha.substr(0, 16) +
         "), max_seq " + std::to_string(max_seq) + ", profile '" + profile + "'";
}

void chat_command(const ChatArgs& a) {
  check_prompt_utf8(a.system, "--system");
  std::vector<std::string> sets = a.sets;
  if (a.max_seq) sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  const RuntimeConfig cfg = load_runtime_config(a.config_file, sets);
  const OverflowPolicy overflow = parse_overflow_policy(cfg.context_overflow, "context_overflow");
  check_backend_choice(a.backend);
  auto ck = Checkpoint::open(a.model);
  const GenerateOptions base = generate_options(a.sampling, *ck);
  if (cfg.max_seq > ck->config().text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(cfg.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(ck->config().text.max_position_embeddings));
  }
  const std::string tok_path = path_join(a.model, "tokenizer.json");
  if (!file_exists(tok_path)) invalid_argument("chat: " + a.model + " has no tokenizer.json");
  const auto tok = Tokenizer::load(tok_path);
  if (a.threads < 0) invalid_argument("--threads " + std::to_string(a.threads) + ": must be at least 1 (0: all cores)");

  SubgraphProfile profile;
  profile.max_seq = cfg.max_seq;
  profile.rope_sine = cfg.rope_sine;
  profile.append_lengths = append_buckets_for(cfg, cfg.max_seq);
  // With --image the vision graphs are set up for the runtime config's vision profile.
  std::unique_ptr<StaticInputBuilder> builder;
  std::string profile_name = "text";
  std::optional<std::string> next_image = a.image;
  if (a.image) {
    builder = StaticInputBuilder::create(a.model, cfg, /*reserve_decode_slot=*/true);
    if (!builder->has_vision()) invalid_argument("chat: --image needs a model with a vision tower; " + a.model + " is text-only");
    set_vision_profile(profile, builder->options().profile);
    profile_name = builder->options().profile.name;
    decode_image_file(*a.image);  // refuse a bad file before the chat starts
  }
  const int threads = a.threads > 0 ? a.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  CpuBackendOptions bo;
  bo.pool = &pool;
  auto backend = create_backend(a.backend, *ck, profile, bo);
  print_backend_placement(*backend, /*with_calls=*/false);
  RuntimeOptions ro;
  ro.mask_fill_value = static_cast<float>(cfg.mask_fill_value);
  auto runtime = Runtime::create(*backend, ck->config(), ck->layers(), ro);
  ConversationOptions co;
  co.system = a.system.value_or("");
  co.overflow = overflow;
  Conversation chat(*runtime, *tok, co);
  const std::string id = identity(a.model, cfg.max_seq, profile_name);

  const bool interactive = isatty(STDIN_FILENO) != 0;
  std::int64_t turn_no = 0, prefilled_total = 0, reused_total = 0;
  std::string line;
  for (;;) {
    if (interactive) std::cerr << "> " << std::flush;
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    try {
      if (line[0] == '/') {
        const std::size_t sp = line.find(' ');
        const std::string cmd = line.substr(0, sp), arg = sp == std::string::npos ? "" : line.substr(sp + 1);
        if (cmd == "/quit" || cmd == "/exit") break;
        if (cmd == "/reset") {
          chat.reset();
          std::cerr << "conversation reset\n";
        } else if (cmd == "/save" && !arg.empty()) {
          chat.save(arg, id);
          std::cerr << "saved " << chat.tokens().size() << " tokens (" << runtime->past_len() << " in the cache) to "
                    << arg << "\n";
        } else if (cmd == "/load" && !arg.empty()) {
          chat.load(arg, id);
          std::cerr << "loaded " << chat.tokens().size() << " tokens, " << chat.turns() << " turns from " << arg << "\n";
        } else if (cmd == "/image" && !arg.empty()) {
          if (!builder) invalid_argument("chat: /image needs the vision graphs: start the chat with --image");
          if (!chat.empty()) {
            invalid_argument("chat: /image: an image can only come with the first turn (the static profile fixes the "
                             "image span's positions); /reset first");
          }
          decode_image_file(arg);
          next_image = arg;
          std::cerr << "the next turn carries " << arg << "\n";
        } else if (cmd == "/stats") {
          std::cerr << "turns " << chat.turns() << ", context " << chat.tokens().size() << " tokens, cache "
                    << runtime->past_len() << "/" << runtime->max_seq() - 1 << ", prefilled " << prefilled_total
                    << " tokens in all, reused " << reused_total << " from the cache\n";
        } else {
          invalid_argument("chat: unknown command '" + line + "'; commands: /reset, /save F, /load F, /image F, "
                           "/stats, /quit");
        }
        continue;
      }
      IncrementalDetokenizer out(*tok, /*skip_special_tokens=*/true);
      GenerateOptions g = base;
      std::unique_ptr<IncrementalDetokenizer> stop_text;
      if (!g.stop_strings.empty()) {
        stop_text = std::make_unique<IncrementalDetokenizer>(*tok);
        g.token_text = [&](std::int64_t t) { return stop_text->push(static_cast<int>(t)); };
      }
      const TokenCallback stream = [&](std::int64_t t) {
        std::cout << out.push(static_cast<int>(t)) << std::flush;
        return true;
      };
      TurnStats s;
      if (next_image && chat.empty()) {
        const TurnText text = render_turn(co.system, line, true, true);
        const RgbImage image = decode_image_file(*next_image);
        const StaticInputs in = builder->build(text.prefix + text.turn, std::span(&image, 1));
        PrefillInput pi;
        pi.llm_input_ids = in.llm_input_ids.as<std::int64_t>();
        pi.valid_length = in.length();
        pi.pixel_values = in.pixel_values->as<float>();
        s = chat.say_first_with_image(pi, in.raw_input_ids.as<std::int64_t>(), g, stream);
        next_image.reset();
      } else {
        s = chat.say(line, g, stream);
      }
      std::cout << out.finish() << "\n" << std::flush;
      ++turn_no;
      prefilled_total += s.prefilled_tokens;
      reused_total += s.reused_tokens;
      const GenerationStats& gs = s.result.stats;
      std::cerr << "turn " << turn_no << ": prefilled " << s.prefilled_tokens << " tokens, reused "
                << s.reused_tokens << " from the cache";
      if (s.dropped_turns > 0) std::cerr << ", dropped " << s.dropped_turns << " oldest turns";
      std::cerr << "; generated " << gs.generated_tokens << " tokens ("
                << fixed(gs.decode_tokens_per_second(), "tok/s") << "); stopped: " << stop_reason_name(s.result.reason)
                << "; context " << s.context_tokens << "/" << runtime->max_seq() - 1 << "\n";
    } catch (const Error& e) {
      if (!interactive) throw;
      std::cerr << "error: " << e.what() << "\n";
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
  cmd->add_option("--system", a->system, "system prompt");
  cmd->add_option("--image", a->image, "image file for the first turn (JPEG or PNG)");
  cmd->add_option("--max-seq", a->max_seq, "static sequence length: the whole conversation's context + 1");
  cmd->add_option("--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  add_backend_options(*cmd, a->backend);
  add_sampling_flags(*cmd, a->sampling);
  add_profile_option(*cmd, a->profile);
  cmd->callback([a] {
    a->sets = with_profile(a->sets, a->profile);
    chat_command(*a);
  });
}

}  // namespace staticlm::cli
