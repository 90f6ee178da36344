// llama.cpp's command-line habits beyond the flags staticlm shares with it:
//  - its one-dash long flags (-ngl, -fa, -sys, ...), which CLI11 would read as a one-letter flag
//    and a value (-ngl 99 as -n gl), spelled as their long names before parsing;
//  - the flags that tune where and how llama.cpp computes, not what (-ngl, -fa, -b, --mlock, ...):
//    accepted so its command lines run, each with a one-line note on stderr; those that change
//    what it computes (--lora, --rope-freq-base, -hf, ...) refused by name;
//  - escape processing of command-line text (-e, the default, and --no-escape).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace staticlm::cli {

// Rewrites llama.cpp's one-dash long flags in argv to their long names.
void spell_llama_cpp_flags(int argc, char** argv);

// The tuning flags llama.cpp's run, chat and server commands take (devices, threads, cache
// types, logging), each noted when given; cosmetic ones accepted silently.
void add_llama_cpp_tuning_flags(CLI::App& cmd);

// llama-bench's own (after the tuning flags and the mmap flags): its switches that take 0|1
// (--mmap, --no-kv-offload, --no-op-offload, --direct-io: -mmp, -nkvo, -nopo, -dio), --delay,
// --progress, -oe.
void add_llama_bench_flags(CLI::App& cmd, bool& resident_weights);

// The flags that would change what llama.cpp computes or where the model comes from (LoRA,
// RoPE overrides, downloads): refused by name, exit 2, rather than run something else.
void add_llama_cpp_refused_flags(CLI::App& cmd);

// llama-cli's conversation flags: `conversation` (chat) accepts -i / -cnv and refuses -no-cnv;
// run accepts -no-cnv and refuses the interactive ones, naming chat.
void add_llama_cpp_mode_flags(CLI::App& cmd, bool conversation);

// llama-server's own flags (scheduling, caches, endpoints, TLS): noted where serve behaves so
// anyway, refused by name where it has no such thing.
void add_llama_server_flags(CLI::App& cmd);

// llama.cpp's string_process_escapes: \n \r \t \' \" \\ and \xHH become the characters; any other
// backslash stays as written.
std::string process_escapes(std::string_view text);

}  // namespace staticlm::cli
