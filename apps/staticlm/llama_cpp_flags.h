// llama.cpp's command-line habits beyond the flags staticlm shares with it:
//  - its one-dash long flags (-ngl, -fa, -sys, ...), which CLI11 would read as a one-letter flag
//    and a value (-ngl 99 as -n gl), spelled as their long names before parsing;
//  - the flags that tune where and how llama.cpp computes, not what (-ngl, -fa, -b, --mlock, ...):
//    accepted so its command lines run, each with a one-line note on stderr;
//  - escape processing of command-line text (-e, the default, and --no-escape).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace staticlm::cli {

// Rewrites llama.cpp's one-dash long flags in argv to their long names.
void spell_llama_cpp_flags(int argc, char** argv);

// The tuning flags llama.cpp's run, chat and server commands take, each noted when given.
void add_llama_cpp_tuning_flags(CLI::App& cmd);

// llama.cpp's string_process_escapes: \n \r \t \' \" \\ and \xHH become the characters; any other
// backslash stays as written.
std::string process_escapes(std::string_view text);

}  // namespace staticlm::cli
