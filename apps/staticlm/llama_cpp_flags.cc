#include "llama_cpp_flags.h"

#include <utility>

#include "base/error.h"
#include "commands.h"

namespace staticlm::cli {

void spell_llama_cpp_flags(int argc, char** argv) {
  // The long names are static: argv keeps pointing at them. Every one-dash long spelling of
  // llama.cpp's tools (common/arg.cpp, llama-bench) is here, those staticlm has no flag for too:
  // they are then refused as the long flag they are, instead of read as a one-letter flag and
  // a value (-sysf F as -s ysf).
  static const std::pair<std::string_view, const char*> names[] = {
      {"-sys", "--system-prompt"},
      {"-ngl", "--n-gpu-layers"},
      {"-fa", "--flash-attn"},
      {"-ub", "--ubatch-size"},
      {"-tb", "--threads-batch"},
      {"-ctk", "--cache-type-k"},
      {"-ctv", "--cache-type-v"},
      {"-nkvo", "--no-kv-offload"},
      {"-np", "--parallel"},
      {"-cnv", "--conversation"},
      {"-no-cnv", "--no-conversation"},
      {"-st", "--single-turn"},
      {"-if", "--interactive-first"},
      {"-mli", "--multiline-input"},
      {"-sp", "--special"},
      {"-co", "--color"},
      {"-jf", "--json-schema-file"},
      {"-lv", "--verbosity"},
      {"-dkvc", "--dump-kv-cache"},
      {"-kvu", "--kv-unified"},
      {"-sm", "--split-mode"},
      {"-mg", "--main-gpu"},
      {"-ts", "--tensor-split"},
      {"-dev", "--device"},
      {"-ot", "--override-tensor"},
      {"-cmoe", "--cpu-moe"},
      {"-ncmoe", "--n-cpu-moe"},
      {"-nr", "--no-repack"},
      {"-Cr", "--cpu-range"},
      {"-Cb", "--cpu-mask-batch"},
      {"-Crb", "--cpu-range-batch"},
      {"-dt", "--defrag-thold"},
      {"-cram", "--cache-ram"},
      {"-hf", "--hf-repo"},
      {"-hfr", "--hf-repo"},
      {"-hff", "--hf-file"},
      {"-mu", "--model-url"},
      {"-md", "--model-draft"},
      {"-cb", "--cont-batching"},
      {"-nocb", "--no-cont-batching"},
      {"-to", "--timeout"},
      {"-sps", "--slot-prompt-similarity"},
      {"-pg", "--prompt-gen"},
      {"-cl", "--cache-list"},
      {"-lcs", "--lookup-cache-static"},
      {"-lcd", "--lookup-cache-dynamic"},
      {"-ctxcp", "--ctx-checkpoints"},
      {"-cms", "--checkpoint-min-step"},
      {"-no-kvu", "--no-kv-unified"},
      {"-sysf", "--system-prompt-file"},
      {"-bf", "--binary-file"},
      {"-ptc", "--print-token-count"},
      {"-bs", "--backend-sampling"},
      {"-gan", "--grp-attn-n"},
      {"-gaw", "--grp-attn-w"},
      {"-kvo", "--kv-offload"},
      {"-ns", "--sequences"},
      {"-mm", "--mmproj"},
      {"-mmu", "--mmproj-url"},
      {"-ndio", "--no-direct-io"},
      {"-lm", "--load-mode"},
      {"-fit", "--fit"},
      {"-fitp", "--fit-print"},
      {"-fitt", "--fit-target"},
      {"-fitc", "--fit-ctx"},
      {"-dr", "--docker-repo"},
      {"-hfv", "--hf-repo-v"},
      {"-hfrv", "--hf-repo-v"},
      {"-hffv", "--hf-file-v"},
      {"-hft", "--hf-token"},
      {"-ofreq", "--output-frequency"},
      {"-ag", "--agent"},
      {"-no-ag", "--no-agent"},
      {"-rea", "--reasoning"},
      {"-hfd", "--spec-draft-hf"},
      {"-hfrd", "--spec-draft-hf"},
      {"-td", "--spec-draft-threads"},
      {"-tbd", "--spec-draft-threads-batch"},
      {"-Cd", "--spec-draft-cpu-mask"},
      {"-Crd", "--spec-draft-cpu-range"},
      {"-Cbd", "--spec-draft-cpu-mask-batch"},
      {"-Crbd", "--spec-draft-cpu-range-batch"},
      {"-ctkd", "--spec-draft-type-k"},
      {"-ctvd", "--spec-draft-type-v"},
      {"-otd", "--spec-draft-override-tensor"},
      {"-cmoed", "--spec-draft-cpu-moe"},
      {"-ncmoed", "--spec-draft-n-cpu-moe"},
      {"-devd", "--spec-draft-device"},
      {"-ngld", "--spec-draft-ngl"},
      {"-mv", "--model-vocoder"},
      {"-lr", "--learning-rate"},
      {"-lr-min", "--learning-rate-min"},
      {"-decay-epochs", "--learning-rate-decay-epochs"},
      {"-wd", "--weight-decay"},
      {"-val-split", "--val-split"},
      {"-epochs", "--epochs"},
      {"-opt", "--optimizer"},
      {"-oe", "--output-err"},
      {"-rpc", "--rpc"},
      {"-embd", "--embeddings"},
  };
  // llama-bench's switches that take 0 or 1 (bench reads their long names with the value).
  static const std::pair<std::string_view, const char*> bench_names[] = {
      {"-mmp", "--mmap"},
      {"-nopo", "--no-op-offload"},
      {"-dio", "--direct-io"},
  };
  const bool bench = argc > 1 && std::string_view(argv[1]) == "bench";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return;  // what follows is not a flag
    for (const auto& [one_dash, long_name] : names) {
      if (arg == one_dash) argv[i] = const_cast<char*>(long_name);
    }
    for (const auto& [one_dash, long_name] : bench_names) {
      if (bench && arg == one_dash) argv[i] = const_cast<char*>(long_name);
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

// A flag (with an optional value when `value`) that is cosmetic or already so here: accepted silently.
void silent(CLI::App& cmd, const std::string& names, const std::string& why, bool value) {
  CLI::Option* o = value ? cmd.add_option(names)->expected(0, 1) : cmd.add_flag(names);
  o->description("accepted for llama.cpp's command lines (" + why + ")")->group("llama.cpp compatibility");
}

// A flag (with a value when `value`) that staticlm cannot honour: refused, naming it and why.
void refused(CLI::App& cmd, const std::string& names, const std::string& why, bool value) {
  const std::string name = names.substr(names.rfind(',') + 1);
  const auto fail = [name, why] { invalid_argument(name + ": " + why); };
  CLI::Option* o = value ? cmd.add_option_function<std::string>(names, [fail](const std::string&) { fail(); })
                         : cmd.add_flag_function(names, [fail](std::int64_t) { fail(); });
  o->description("llama.cpp's; refused: " + why)->group("llama.cpp compatibility");
}

}  // namespace

void add_llama_cpp_tuning_flags(CLI::App& cmd) {
  const std::string devices = "the cpu back end runs every graph on this machine's cores (a --backend plug-in places its own)";
  noted(cmd, "--gpu-layers,--n-gpu-layers", devices);
  noted(cmd, "--split-mode", devices);
  noted(cmd, "--main-gpu", devices);
  noted(cmd, "--tensor-split", devices);
  noted(cmd, "--device", devices);
  noted(cmd, "--override-tensor", devices);
  noted(cmd, "--n-cpu-moe", "Gemma 4 E2B has no experts");
  noted_flag(cmd, "--cpu-moe", "Gemma 4 E2B has no experts");
  noted_flag(cmd, "--no-op-offload", devices);
  noted(cmd, "--flash-attn", "decode attention already runs in one pass over key ranges", /*value_optional=*/true);
  noted(cmd, "-b,--batch-size", "prefill runs the static max_seq shape in one call");
  noted(cmd, "--ubatch-size", "prefill runs the static max_seq shape in one call");
  noted(cmd, "--threads-batch", "--threads sets the threads of prefill and decode alike");
  noted(cmd, "--cache-type-k", "the static graphs fix the KV cache's type");
  noted(cmd, "--cache-type-v", "the static graphs fix the KV cache's type");
  noted_flag(cmd, "--kv-unified", "each sequence has its own static KV cache");
  noted_flag(cmd, "--swa-full", "the static graphs fix the sliding window's cache");
  noted(cmd, "--defrag-thold", "the static KV cache is never fragmented");
  noted(cmd, "--keep", "the static KV cache never shifts: a reply stops when the cache is full");
  noted_flag(cmd, "--context-shift", "the static KV cache never shifts: a reply stops when the cache is full");
  noted_flag(cmd, "--no-context-shift", "the static KV cache never shifts: a reply stops when the cache is full");
  noted(cmd, "--numa", "threads are left to the operating system");
  const std::string affinity = "threads are left to the operating system (taskset pins a process)";
  noted(cmd, "-C,--cpu-mask", affinity);
  noted(cmd, "--cpu-range", affinity);
  noted(cmd, "--cpu-strict", affinity);
  noted(cmd, "--prio", affinity);
  noted(cmd, "--poll", affinity);
  noted(cmd, "--cpu-mask-batch", affinity);
  noted(cmd, "--cpu-range-batch", affinity);
  noted(cmd, "--cpu-strict-batch", affinity);
  noted(cmd, "--prio-batch", affinity);
  noted(cmd, "--poll-batch", affinity);
  noted_flag(cmd, "--no-repack", "the weights are used as the checkpoint stores them");
  noted_flag(cmd, "--mlock", "the weights are not locked in memory (--no-mmap copies the streamed ones off the page cache)");
  noted_flag(cmd, "--no-kv-offload", "the KV cache is in host memory");
  noted(cmd, "--fit", devices);
  noted(cmd, "--fit-target", devices);
  noted(cmd, "--fit-ctx", devices);
  noted(cmd, "--ctx-checkpoints", "the static KV cache keeps no checkpoints (a conversation's cached prefix is reused)");
  noted_flag(cmd, "--no-warmup", "nothing is warmed up before the first call");
  noted_flag(cmd, "--warmup", "nothing is warmed up before the first call");
  const std::string logs = "staticlm writes one line per event on stderr and has no log levels";
  noted_flag(cmd, "-v,--log-verbose,--verbose", logs);
  noted(cmd, "--log-verbosity,--verbosity", logs);
  noted(cmd, "--log-file", logs + " (redirect stderr: 2> FILE)");
  noted_flag(cmd, "--dump-kv-cache", "bench and inspect report the KV cache");
  // Cosmetic or already so: accepted silently.
  silent(cmd, "--color", "output is not coloured", true);
  silent(cmd, "--log-colors", "output is not coloured", true);
  silent(cmd, "--log-prefix", "stderr lines carry no prefix", false);
  silent(cmd, "--log-timestamps", "stderr lines carry no timestamps", false);
  silent(cmd, "--no-display-prompt", "the prompt is never echoed", false);
  silent(cmd, "--simple-io", "input and output are plain lines", false);
  silent(cmd, "--perf", "statistics are printed unless --no-perf", false);
}

void add_llama_bench_flags(CLI::App& cmd, bool& resident_weights) {
  // llama-bench's switches take 0 or 1 (lists of them run a test per value there; one here).
  const auto zero_or_one = [](const std::string& name, const std::string& v) {
    if (!v.empty() && v != "0" && v != "1") {
      invalid_argument(name + " " + v + ": expected 0 or 1 (llama-bench's form; one value: staticlm runs no list of them)");
    }
    return v != "0";
  };
  for (const char* name : {"--no-kv-offload", "--no-op-offload"}) {
    cmd.remove_option(cmd.get_option(name));
    const std::string n = name;
    cmd.add_option_function<std::string>(
           n,
           [n, zero_or_one](const std::string& v) {
             if (zero_or_one(n, v)) log_to_stderr("note: " + n + " has no effect: the cpu back end keeps everything in host memory");
           },
           "accepted for llama-bench's command lines (0|1): the cpu back end keeps everything in host memory")
        ->expected(0, 1)
        ->group("llama.cpp compatibility");
  }
  cmd.add_option_function<std::string>(
         "--direct-io",
         [zero_or_one](const std::string& v) {
           if (zero_or_one("--direct-io", v)) log_to_stderr("note: --direct-io has no effect: the checkpoint is memory-mapped");
         },
         "accepted for llama-bench's command lines (0|1): the checkpoint is memory-mapped")
      ->expected(0, 1)
      ->group("llama.cpp compatibility");
  // --mmap 0 is --no-mmap, as llama-bench's -mmp 0; --mmap alone or 1 the default.
  cmd.remove_option(cmd.get_option("--no-mmap"));
  CLI::Option* no_mmap = cmd.add_flag("--no-mmap", resident_weights,
                                      "copy the matrices decode reads every step into huge-page memory (as --mmap 0)");
  // One or the other: CLI11 runs a flag's and an option's callbacks in its own order, not the
  // command line's, so the last of the two could not win.
  cmd.add_option_function<std::string>(
         "--mmap", [&resident_weights, zero_or_one](const std::string& v) { resident_weights = !zero_or_one("--mmap", v); },
         "read the weights through the checkpoint's memory map (the default; 0: as --no-mmap; llama-bench's -mmp)")
      ->expected(0, 1)
      ->excludes(no_mmap);
  noted(cmd, "--delay", "the tests run one after the other");
  noted(cmd, "--output-err", "progress lines go to stderr as text");
  silent(cmd, "--progress", "progress lines are always printed", false);
}

void add_llama_cpp_refused_flags(CLI::App& cmd) {
  const auto unsupported = [&cmd](const std::string& names, const std::string& why) { refused(cmd, names, "not supported: " + why, true); };
  const std::string local = "staticlm downloads nothing: -m takes a local checkpoint directory in Hugging Face layout";
  unsupported("--hf-repo", local);
  unsupported("--hf-file", local);
  unsupported("--model-url", local);
  unsupported("--hf-token", local);
  unsupported("--model-draft", "there is no speculative decoding");
  const std::string vision = "the checkpoint directory holds the vision tower (model.safetensors) and its processor configs";
  unsupported("--mmproj", vision);
  unsupported("--mmproj-url", vision);
  const std::string as_exported = "the static graphs compute the checkpoint as exported";
  unsupported("--lora", as_exported);
  unsupported("--lora-scaled", as_exported);
  unsupported("--control-vector", as_exported);
  unsupported("--control-vector-scaled", as_exported);
  unsupported("--override-kv", as_exported + " (its config.json is the model's metadata)");
  unsupported("--rope-scaling", as_exported + " (host RoPE tables follow config.json)");
  unsupported("--rope-scale", as_exported + " (host RoPE tables follow config.json)");
  unsupported("--rope-freq-base", as_exported + " (host RoPE tables follow config.json)");
  unsupported("--rope-freq-scale", as_exported + " (host RoPE tables follow config.json)");
  unsupported("--grp-attn-n", as_exported + " (no self-extend)");
  unsupported("--grp-attn-w", as_exported + " (no self-extend)");
}

void add_llama_cpp_mode_flags(CLI::App& cmd, bool conversation) {
  noted(cmd, "--parallel", "one sequence at a time here (serve's -np / --parallel sets its slots)");
  if (conversation) {
    silent(cmd, "-i,--interactive,--interactive-first,--conversation", "chat is a conversation", false);
    refused(cmd, "--no-conversation", "chat is a conversation; `staticlm run -m DIR -p TEXT` answers one prompt", false);
    // llama-cli ignores these in conversation mode too: the chat template lays out each turn.
    const std::string templated = "each turn is laid out by the chat format (llama-cli ignores it in conversation mode)";
    noted(cmd, "--in-prefix", templated);
    noted(cmd, "--in-suffix", templated);
    noted_flag(cmd, "--in-prefix-bos", templated);
    noted_flag(cmd, "--multiline-input", "each stdin line is one turn");
    return;
  }
  silent(cmd, "--no-conversation", "run answers one prompt and exits", false);
  const std::string chat = "run answers one prompt and exits; `staticlm chat -m DIR` holds a conversation";
  refused(cmd, "-i,--interactive", chat, false);
  refused(cmd, "--interactive-first", chat, false);
  refused(cmd, "--conversation", chat, false);
  refused(cmd, "--multiline-input", chat, false);
  refused(cmd, "--in-prefix", chat, true);
  refused(cmd, "--in-suffix", chat, true);
  refused(cmd, "--in-prefix-bos", chat, false);
}

void add_llama_server_flags(CLI::App& cmd) {
  const std::string scheduling = "each slot runs one request at a time; the others wait in the queue (--queue)";
  noted_flag(cmd, "--cont-batching", scheduling);
  noted_flag(cmd, "--no-cont-batching", scheduling);
  noted(cmd, "--threads-http", "one thread per connection, up to the slots and the queue");
  const std::string reuse = "a slot reuses the cached prefix its next prompt shares";
  noted(cmd, "--cache-reuse", reuse);
  noted(cmd, "--slot-prompt-similarity", reuse);
  noted(cmd, "--cache-ram", reuse);
  noted_flag(cmd, "--webui", "there is no web UI: the OpenAI-style endpoints only");
  silent(cmd, "--no-webui", "there is no web UI", false);
  refused(cmd, "--embedding,--embeddings", "not supported: serve generates text; it has no /embeddings endpoint", false);
  refused(cmd, "--reranking,--rerank", "not supported: serve generates text; it has no /rerank endpoint", false);
  refused(cmd, "--path", "not supported: serve has no static files", true);
  refused(cmd, "--api-prefix", "not supported: the endpoints are at /v1/... and /...", true);
  refused(cmd, "--slot-save-path", "not supported: slots are not saved to files", true);
  const std::string tls = "not supported: serve speaks plain HTTP (put a TLS proxy in front)";
  refused(cmd, "--ssl-key-file", tls, true);
  refused(cmd, "--ssl-cert-file", tls, true);
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
