// libstaticlm_cpu_plugin.so: the CPU back end through the plug-in C ABI only, so the ABI is
// exercised by the real pipeline: `staticlm run --backend plugin:libstaticlm_cpu_plugin.so`
// must give the same bits as `--backend cpu`.
//
// Options (--backend plugin:PATH:key=value,...): threads=N, bf16_activations=0|1,
// skip_padded_rows=0|1, kernel_target=NAME (plugin_export.h); any other key is refused.
#include "backends/plugin/plugin_export.h"

namespace {

staticlm::plugin::ExportedBackend make(const std::string& model_dir, const staticlm::SubgraphProfile& profile,
                                       staticlm::plugin::PluginOptions& options) {
  return staticlm::plugin::export_cpu_backend(model_dir, profile, options);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const staticlm_backend_plugin* staticlm_backend_plugin_v1(void) {
  return staticlm::plugin::export_backend_plugin("cpu", &make);
}
