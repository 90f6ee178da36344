// The plug-in side of the C ABI for plug-ins written in C++ on this library: turns a factory
// of C++ Backends into the staticlm_backend_plugin table, so a plug-in's entry point is a few
// lines (plugins/cpu_plugin/). Exceptions never cross the boundary: they become a nonzero
// return and last_error().
//
//   extern "C" const staticlm_backend_plugin* staticlm_backend_plugin_v1(void) {
//     return staticlm::plugin::export_backend_plugin("cpu", &make_backend);
//   }
//
// Each shared object links its own copy of the library, so the one factory it registers is
// its own.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "staticlm/backend.h"
#include "staticlm/backend_plugin.h"

namespace staticlm::plugin {

using PluginOptions = std::map<std::string, std::string>;

// A backend and what it borrows (a checkpoint, a thread pool), freed after it.
struct ExportedBackend {
  std::vector<std::shared_ptr<void>> owned;
  std::unique_ptr<Backend> backend;
};

// Builds a backend for a model directory and profile. Consumes the options it knows (erases
// them); any left over are refused by the exporter, naming the key.
using PluginFactory = ExportedBackend (*)(const std::string& model_dir, const SubgraphProfile& profile,
                                          PluginOptions& options);

// The table for this shared object; the first call registers factory, later calls return the
// same table. name must be a string literal.
const staticlm_backend_plugin* export_backend_plugin(const char* name, PluginFactory factory);

// The CPU back end for a plug-in: opens the checkpoint and consumes the options
// threads=N (default: one per core), bf16_activations=0|1 (default 1),
// skip_padded_rows=0|1 (default 1), kernel_target=NAME (default: the best this CPU runs).
ExportedBackend export_cpu_backend(const std::string& model_dir, const SubgraphProfile& profile, PluginOptions& options);

}  // namespace staticlm::plugin
