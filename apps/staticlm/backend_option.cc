#include "backend_option.h"

#include <iostream>

namespace staticlm::cli {

void add_backend_options(CLI::App& cmd, BackendChoice& choice) {
  cmd.add_option("--backend", choice.backend,
                 "subgraph back end: cpu (default) or plugin:PATH.so[:key=value,...] (docs/backends.md)");
  cmd.add_option("--fallback", choice.fallback,
                 "none (default) or cpu: run the graphs a plug-in does not provide on the CPU back end");
}

void add_mmap_flags(CLI::App& cmd, bool& resident_weights) {
  cmd.add_flag("--no-mmap,!--mmap", resident_weights,
               "--no-mmap: copy the matrices decode reads every step into huge-page memory (not dropped and re-read "
               "from disk under page-cache pressure; longer load); --mmap (default): read them through the checkpoint's memory map");
}

void print_backend_placement(const Backend& backend, bool with_calls) {
  const std::string line = backend_placement(backend, with_calls);
  if (!line.empty()) std::cerr << line << "\n";
}

}  // namespace staticlm::cli
