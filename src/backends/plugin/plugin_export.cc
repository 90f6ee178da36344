#include "backends/plugin/plugin_export.h"

#include <exception>
#include <thread>

#include "backends/cpu/kernels/dispatch.h"
#include "backends/plugin/plugin_abi.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"

// The instance behind the opaque C handle.
struct staticlm_backend {
  staticlm::plugin::ExportedBackend exported;
  staticlm::plugin::AbiSignatures abi;
  std::string error;
};

namespace staticlm::plugin {

namespace {

PluginFactory g_factory = nullptr;
thread_local std::string g_create_error;

int create(const char* model_dir, const staticlm_profile* profile, const staticlm_option* options, size_t num_options,
           staticlm_backend** out) {
  try {
    if (model_dir == nullptr || profile == nullptr || out == nullptr) invalid_argument("create: null argument");
    if (num_options > 0 && options == nullptr) invalid_argument("create: null options");
    PluginOptions opts;
    for (size_t i = 0; i < num_options; ++i) {
      if (options[i].key == nullptr || options[i].value == nullptr) invalid_argument("create: null option");
      opts[options[i].key] = options[i].value;
    }
    auto instance = std::make_unique<staticlm_backend>();
    instance->exported = g_factory(model_dir, profile_from_abi(*profile), opts);
    if (!opts.empty()) invalid_argument("unknown option '" + opts.begin()->first + "'");
    instance->abi = abi_signatures(instance->exported.backend->signatures());
    *out = instance.release();
    return 0;
  } catch (const std::exception& e) {
    g_create_error = e.what();
    return 1;
  }
}

const staticlm_subgraph_signature* signatures(const staticlm_backend* b, size_t* count) {
  *count = b->abi.signatures.size();
  return b->abi.signatures.data();
}

int run(staticlm_backend* b, const char* subgraph, const staticlm_tensor_buffer* inputs, size_t num_inputs,
        const staticlm_tensor_buffer* outputs, size_t num_outputs) {
  try {
    const std::string name = subgraph != nullptr ? subgraph : "";
    std::vector<TensorView> in;
    for (size_t i = 0; i < num_inputs; ++i) in.push_back(view_from_abi(inputs[i], name + " input " + std::to_string(i)));
    std::vector<TensorBuffer> out;
    for (size_t i = 0; i < num_outputs; ++i) {
      const TensorView v = view_from_abi(outputs[i], name + " output " + std::to_string(i));
      out.push_back({v.dtype, v.shape, const_cast<void*>(v.data)});
    }
    b->exported.backend->run(name, in, out);
    return 0;
  } catch (const std::exception& e) {
    b->error = e.what();
    return 1;
  }
}

const char* last_error(const staticlm_backend* b) { return b != nullptr ? b->error.c_str() : g_create_error.c_str(); }

void destroy(staticlm_backend* b) { delete b; }

bool flag(PluginOptions& o, const std::string& key, bool fallback) {
  const auto it = o.find(key);
  if (it == o.end()) return fallback;
  const std::string v = it->second;
  o.erase(it);
  if (v != "0" && v != "1") invalid_argument("option " + key + "=" + v + ": expected 0 or 1");
  return v == "1";
}

}  // namespace

const staticlm_backend_plugin* export_backend_plugin(const char* name, PluginFactory factory) {
  static const staticlm_backend_plugin table = [name] {
    staticlm_backend_plugin t{};
    t.abi_version = STATICLM_PLUGIN_ABI_VERSION;
    t.struct_size = sizeof(staticlm_backend_plugin);
    t.tensor_spec_size = sizeof(staticlm_tensor_spec);
    t.signature_size = sizeof(staticlm_subgraph_signature);
    t.profile_size = sizeof(staticlm_profile);
    t.tensor_buffer_size = sizeof(staticlm_tensor_buffer);
    t.name = name;
    t.create = &create;
    t.signatures = &signatures;
    t.run = &run;
    t.last_error = &last_error;
    t.destroy = &destroy;
    return t;
  }();
  if (g_factory == nullptr) g_factory = factory;
  return &table;
}

ExportedBackend export_cpu_backend(const std::string& model_dir, const SubgraphProfile& profile, PluginOptions& options) {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  if (const auto it = options.find("threads"); it != options.end()) {
    try {
      std::size_t used = 0;
      threads = std::stoi(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument("trailing");
    } catch (const std::exception&) {
      invalid_argument("option threads=" + it->second + ": expected a whole number");
    }
    if (threads < 1 || threads > 256) invalid_argument("option threads=" + it->second + ": expected 1..256");
    options.erase(it);
  }
  if (const auto it = options.find("kernel_target"); it != options.end()) {
    cpu::select_kernel_target(it->second);
    options.erase(it);
  }
  CpuBackendOptions bo;
  bo.bf16_activations = flag(options, "bf16_activations", true);
  bo.skip_padded_rows = flag(options, "skip_padded_rows", true);
  auto checkpoint = std::shared_ptr<Checkpoint>(Checkpoint::open(model_dir));
  auto pool = std::make_shared<ThreadPool>(std::max(threads, 1));
  bo.pool = pool.get();
  ExportedBackend e;
  e.owned = {checkpoint, pool};
  e.backend = CpuBackend::create(*checkpoint, profile, bo);
  return e;
}

}  // namespace staticlm::plugin
