// libstaticlm_partial_plugin.so: a deliberately partial plug-in that runs only token_embedding
// and lm_head (on the CPU back end, through the C ABI), as an accelerator that lacks the other
// graphs would. With `--fallback cpu` the host runs the rest on its own CPU back end; without
// it the host refuses the plug-in, naming the missing graphs. Options: as the CPU plug-in.
#include <algorithm>

#include "backends/plugin/plugin_export.h"
#include "backends/subgraph_contract.h"

namespace {

using namespace staticlm;

// Publishes only the graphs in `keep` of the backend it wraps.
class SubsetBackend : public Backend {
 public:
  SubsetBackend(std::unique_ptr<Backend> inner, const std::vector<std::string>& keep) : inner_(std::move(inner)) {
    for (const SubgraphSignature& s : inner_->signatures()) {
      if (std::find(keep.begin(), keep.end(), s.name) != keep.end()) signatures_.push_back(s);
    }
  }
  std::string name() const override { return "partial"; }
  const SubgraphProfile& profile() const override { return inner_->profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return signatures_; }
  void run(const std::string& name, std::span<const TensorView> in, std::span<const TensorBuffer> out) override {
    signature(name);  // refuses a graph this plug-in does not publish
    inner_->run(name, in, out);
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::vector<SubgraphSignature> signatures_;
};

plugin::ExportedBackend make(const std::string& model_dir, const SubgraphProfile& profile,
                             plugin::PluginOptions& options) {
  plugin::ExportedBackend e = plugin::export_cpu_backend(model_dir, profile, options);
  e.backend = std::make_unique<SubsetBackend>(std::move(e.backend), std::vector<std::string>{kTokenEmbedding, kLmHead});
  return e;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const staticlm_backend_plugin* staticlm_backend_plugin_v1(void) {
  return staticlm::plugin::export_backend_plugin("partial", &make);
}
