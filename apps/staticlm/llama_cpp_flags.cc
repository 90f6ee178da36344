#include "llama_cpp_flags.h"

#include <array>
#include <utility>

#include "commands.h"

namespace staticlm::cli {

void spell_llama_cpp_flags(int argc, char** argv) {
  // The long names are static: argv keeps pointing at them.
  static std::array<std::pair<std::string_view, char*>, 9> names = {{
      {"-sys", const_cast<char*>("--system-prompt")},
      {"-ngl", const_cast<char*>("--n-gpu-layers")},
      {"-fa", const_cast<char*>("--flash-attn")},
      {"-ub", const_cast<char*>("--ubatch-size")},
      {"-tb", const_cast<char*>("--threads-batch")},
      {"-ctk", const_cast<char*>("--cache-type-k")},
      {"-ctv", const_cast<char*>("--cache-type-v")},
      {"-nkvo", const_cast<char*>("--no-kv-offload")},
      {"-np", const_cast<char*>("--parallel")},
  }};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return;  // what follows is not a flag
    for (const auto& [one_dash, long_name] : names) {
      if (arg == one_dash) argv[i] = long_name;
    }
  }
}

namespace {

// A flag with a value (optional when `value_optional`) that changes nothing here: noted.
void noted(CLI::App& cmd, const std::string& names, const std::string& why, bool value_optional = false) {
  const std::string name = names.substr(names.rfind(',') + 1);
  auto* o = cmd.add_option_function<std::string>(
      names, [name, why](const std::string& v) { log_to_stderr("note: " + name + (v.empty() ? "" : " " + v) + " has no effect: " + why); },
      "accepted for llama.cpp's command lines: " + why);
  if (value_optional) o->expected(0, 1);
  o->group("llama.cpp compatibility");
}

void noted_flag(CLI::App& cmd, const std::string& names, const std::string& why) {
  const std::string name = names.substr(names.rfind(',') + 1);
  cmd.add_flag_function(names, [name, why](std::int64_t) { log_to_stderr("note: " + name + " has no effect: " + why); },
                        "accepted for llama.cpp's command lines: " + why)
      ->group("llama.cpp compatibility");
}

}  // namespace

void add_llama_cpp_tuning_flags(CLI::App& cmd) {
  noted(cmd, "--gpu-layers,--n-gpu-layers", "the cpu back end runs every graph (a --backend plug-in places its own)");
  noted(cmd, "--flash-attn", "decode attention already runs in one pass over key ranges", /*value_optional=*/true);
  noted(cmd, "-b,--batch-size", "prefill runs the static max_seq shape in one call");
  noted(cmd, "--ubatch-size", "prefill runs the static max_seq shape in one call");
  noted(cmd, "--threads-batch", "--threads sets the threads of prefill and decode alike");
  noted(cmd, "--cache-type-k", "the static graphs fix the KV cache's type");
  noted(cmd, "--cache-type-v", "the static graphs fix the KV cache's type");
  noted(cmd, "--numa", "threads are left to the operating system");
  noted_flag(cmd, "--mlock", "the weights are not locked in memory (--no-mmap copies the streamed ones off the page cache)");
  noted_flag(cmd, "--no-kv-offload", "the KV cache is in host memory");
  noted_flag(cmd, "--no-warmup", "nothing is warmed up before the first call");
  noted_flag(cmd, "--warmup", "nothing is warmed up before the first call");
  // Cosmetic or already so: accepted silently.
  cmd.add_option("--color", "accepted for llama.cpp's command lines (output is not coloured)")->expected(0, 1)->group("llama.cpp compatibility");
  cmd.add_flag("--no-display-prompt")
      ->description("accepted for llama.cpp's command lines (the prompt is never echoed)")
      ->group("llama.cpp compatibility");
}

std::string process_escapes(std::string_view text) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\'': case '"': case '\\': out += c; break;
      case 'x':
        if (i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
          out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default:
        out += '\\';
        out += c;
    }
  }
  return out;
}

}  // namespace staticlm::cli
