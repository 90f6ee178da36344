// --backend cpu|plugin:PATH.so[:key=value,...] and --fallback none|cpu, shared by the commands
// that run subgraphs (run, inspect, bench, chat, serve); backends/backend_factory.h parses and
// builds them.
#pragma once

#include <CLI/CLI.hpp>

#include "backends/backend_factory.h"

namespace staticlm::cli {

void add_backend_options(CLI::App& cmd, BackendChoice& choice);

// --no-mmap / --mmap (llama.cpp's spellings): whether the CPU back end copies the matrices decode
// streams into huge-page memory (resident_weights, CpuBackendOptions) or, by default, reads them
// through the checkpoint's memory map.
void add_mmap_flags(CLI::App& cmd, bool& resident_weights);

// Prints which graphs ran where (a plug-in back end; with call counts when with_calls) to stderr; nothing for the CPU back end.
void print_backend_placement(const Backend& backend, bool with_calls = true);

}  // namespace staticlm::cli
