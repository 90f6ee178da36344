// Choosing a back end by name: `--backend cpu | plugin:PATH.so[:key=value,...]` and
// `--fallback none | cpu`, parsed and built in one place for every command (and the library
// API) that runs subgraphs. A plug-in is loaded and checked against the contract
// (plugin/plugin_backend.h); graphs it does not provide run on the CPU back end with
// `--fallback cpu`, and are refused, by name, without it.
#pragma once

#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/plugin/plugin_backend.h"
#include "staticlm/backend.h"

namespace staticlm {

class Checkpoint;

struct BackendSpec {
  bool plugin = false;
  std::string path;           // the plug-in's shared object
  PluginOptionList options;   // key=value pairs, in order, for the plug-in
};

// "cpu", or "plugin:PATH" with an optional ":key=value,key=value" after the path (from the
// first ':' of the file name that a '=' follows; values may hold ':'). Throws
// kInvalidArgument naming the text and what was expected.
BackendSpec parse_backend_spec(const std::string& text);

struct BackendChoice {
  std::string backend = "cpu";   // --backend
  std::string fallback = "none"; // --fallback: none | cpu
};

// Parses both flags (kInvalidArgument naming the flag and value); a fallback goes only with a
// plug-in, and the plug-in file must exist and not be cut short. Cheap: commands call it before any slow work.
BackendSpec check_backend_choice(const BackendChoice& choice);

// The back end to run: the CPU back end, or the plug-in (with the CPU back end for the graphs
// it lacks when the fallback is cpu). `cpu` configures the CPU back end and its fallback role;
// its pool must outlive the result, as must the checkpoint.
std::unique_ptr<Backend> create_backend(const BackendChoice& choice, const Checkpoint& checkpoint,
                                        const SubgraphProfile& profile, const CpuBackendOptions& cpu);

// Which graphs ran where (with call counts when with_calls) (RoutedBackend::placement) for a plug-in back end;
// "" for the CPU back end.
std::string backend_placement(const Backend& backend, bool with_calls = true);

}  // namespace staticlm
