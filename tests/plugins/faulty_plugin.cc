// A test plug-in: the CPU back end through the C ABI with one fault chosen by option
// (--backend plugin:libtest_plugin_faulty.so:KEY=GRAPH):
//   misreport=GRAPH  reports GRAPH's first output one element longer on its last axis
//   fail=GRAPH       run(GRAPH) fails with the message "simulated device fault"
//   perturb=GRAPH    adds 0.5 to the first element of GRAPH's first output
//   skip=GRAPH       run(GRAPH) returns without writing its outputs
//   scribble=GRAPH   run(GRAPH) also writes into its first input
//   only=GRAPH       publishes GRAPH alone (backend-check on one graph)
#include "backends/plugin/plugin_export.h"
#include "base/error.h"

namespace {

using namespace staticlm;

class FaultyBackend : public Backend {
 public:
  FaultyBackend(std::unique_ptr<Backend> inner, plugin::PluginOptions faults) : inner_(std::move(inner)) {
    auto take = [&faults](const char* key) {
      const auto it = faults.find(key);
      return it == faults.end() ? std::string() : it->second;
    };
    misreport_ = take("misreport"), fail_ = take("fail"), perturb_ = take("perturb");
    skip_ = take("skip"), scribble_ = take("scribble");
    const std::string only = take("only");
    for (SubgraphSignature s : inner_->signatures()) {
      if (!only.empty() && s.name != only) continue;
      if (s.name == misreport_) {
        Shape& shape = s.outputs[0].shape;
        shape[shape.rank() - 1] += 1;
      }
      signatures_.push_back(std::move(s));
    }
  }
  std::string name() const override { return "faulty"; }
  const SubgraphProfile& profile() const override { return inner_->profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return signatures_; }
  void run(const std::string& name, std::span<const TensorView> in, std::span<const TensorBuffer> out) override {
    if (name == fail_) invalid_argument("simulated device fault");
    if (name == skip_) return;
    inner_->run(name, in, out);
    if (name == scribble_) *static_cast<std::uint8_t*>(const_cast<void*>(in[0].data)) ^= 1;
    if (name == perturb_) static_cast<float*>(out[0].data)[0] += 0.5f;
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::vector<SubgraphSignature> signatures_;
  std::string misreport_, fail_, perturb_, skip_, scribble_;
};

plugin::ExportedBackend make(const std::string& model_dir, const SubgraphProfile& profile,
                             plugin::PluginOptions& options) {
  plugin::PluginOptions faults;
  for (const char* key : {"misreport", "fail", "perturb", "skip", "scribble", "only"}) {
    if (const auto it = options.find(key); it != options.end()) {
      faults.insert(*it);
      options.erase(it);
    }
  }
  plugin::ExportedBackend e = plugin::export_cpu_backend(model_dir, profile, options);
  e.backend = std::make_unique<FaultyBackend>(std::move(e.backend), faults);
  return e;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const staticlm_backend_plugin* staticlm_backend_plugin_v1(void) {
  return staticlm::plugin::export_backend_plugin("faulty", &make);
}
