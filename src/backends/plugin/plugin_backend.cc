#include "backends/plugin/plugin_backend.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <set>

#include "backends/plugin/elf_extent.h"
#include "backends/plugin/plugin_abi.h"
#include "backends/subgraph_contract.h"
#include "base/error.h"

namespace staticlm {

namespace {

std::string describe(const TensorSpec& t) {
  return std::string(dtype_name(t.dtype)) + " " + t.shape.to_string() +
         (t.dynamic_axis >= 0 ? " dynamic axis " + std::to_string(t.dynamic_axis) : "");
}

void check_tensors(const std::vector<TensorSpec>& got, const std::vector<TensorSpec>& want, const std::string& where,
                   const char* role) {
  if (got.size() != want.size()) {
    invalid_argument(where + ": " + std::to_string(got.size()) + " " + role + "s, expected " +
                     std::to_string(want.size()));
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const TensorSpec &g = got[i], &w = want[i];
    const std::string at = where + ": " + role + " " + std::to_string(i);
    if (g.name != w.name) invalid_argument(at + " is named '" + g.name + "', expected '" + w.name + "'");
    if (g.dtype != w.dtype || g.shape != w.shape || g.dynamic_axis != w.dynamic_axis) {
      invalid_argument(where + ": " + role + " " + g.name + ": " + describe(g) + ", expected " + describe(w));
    }
  }
}

// Size checks of the table: the version-1 sizes this loader knows are the least it accepts.
void check_size(std::uint32_t got, std::size_t want, const std::string& where, const char* field) {
  if (got < want) {
    invalid_argument(where + ": " + field + " " + std::to_string(got) + ", expected at least " + std::to_string(want) +
                     " (built against another backend_plugin.h?)");
  }
}

}  // namespace

std::vector<SubgraphSignature> check_against_contract(const std::vector<SubgraphSignature>& reported,
                                                      const std::vector<SubgraphSignature>& contract,
                                                      const std::string& where) {
  std::map<std::string, const SubgraphSignature*> by_name;
  for (const SubgraphSignature& s : reported) {
    if (!by_name.emplace(s.name, &s).second) invalid_argument(where + ": subgraph " + s.name + " is reported twice");
  }
  std::vector<SubgraphSignature> ordered;
  for (const SubgraphSignature& want : contract) {
    const auto it = by_name.find(want.name);
    if (it == by_name.end()) continue;
    const std::string at = where + ": subgraph " + want.name;
    check_tensors(it->second->inputs, want.inputs, at, "input");
    check_tensors(it->second->outputs, want.outputs, at, "output");
    ordered.push_back(*it->second);
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    invalid_argument(where + ": subgraph " + by_name.begin()->first +
                     " is not in the contract for this checkpoint and profile");
  }
  return ordered;
}

std::unique_ptr<PluginBackend> PluginBackend::load(const std::string& path, const PluginOptionList& options,
                                                   const std::string& model_dir, const ModelConfig& config,
                                                   const std::vector<LayerInfo>& layers,
                                                   const SubgraphProfile& profile) {
  const std::string where = "plugin " + path;
  if (!std::filesystem::is_regular_file(path)) invalid_argument(where + ": no such file");
  check_elf_extent(path, where);
  std::unique_ptr<PluginBackend> b(new PluginBackend());
  b->path_ = path;
  b->name_ = "plugin:" + std::filesystem::path(path).filename().string();
  b->profile_ = profile;
  // A relative path is looked up as given, not in the library search path.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  b->library_ = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (b->library_ == nullptr) {
    const char* e = dlerror();
    invalid_argument(where + ": cannot load: " + (e ? e : "unknown error"));
  }
  void* entry = dlsym(b->library_, STATICLM_PLUGIN_ENTRY_POINT);
  if (entry == nullptr) {
    invalid_argument(where + ": no entry point " STATICLM_PLUGIN_ENTRY_POINT " (not a staticlm back-end plug-in?)");
  }
  const staticlm_backend_plugin* t = reinterpret_cast<staticlm_backend_plugin_entry>(entry)();
  if (t == nullptr) invalid_argument(where + ": " STATICLM_PLUGIN_ENTRY_POINT "() returned null");
  if (t->abi_version != STATICLM_PLUGIN_ABI_VERSION) {
    invalid_argument(where + ": ABI version " + std::to_string(t->abi_version) + ", this staticlm loads version " +
                     std::to_string(STATICLM_PLUGIN_ABI_VERSION));
  }
  check_size(t->struct_size, sizeof(staticlm_backend_plugin), where, "struct_size");
  check_size(t->tensor_spec_size, sizeof(staticlm_tensor_spec), where, "tensor_spec_size");
  check_size(t->signature_size, sizeof(staticlm_subgraph_signature), where, "signature_size");
  check_size(t->profile_size, sizeof(staticlm_profile), where, "profile_size");
  check_size(t->tensor_buffer_size, sizeof(staticlm_tensor_buffer), where, "tensor_buffer_size");
  if (!t->create || !t->signatures || !t->run || !t->last_error || !t->destroy) {
    invalid_argument(where + ": the function table has a null entry");
  }
  b->table_ = t;

  const staticlm_profile cp = plugin::abi_profile(profile);
  std::vector<staticlm_option> opts;
  for (const auto& [k, v] : options) opts.push_back({k.c_str(), v.c_str()});
  if (t->create(model_dir.c_str(), &cp, opts.data(), opts.size(), &b->instance_) != 0 || b->instance_ == nullptr) {
    b->instance_ = nullptr;
    invalid_argument(where + ": create failed: " + t->last_error(nullptr));
  }
  std::size_t count = 0;
  const staticlm_subgraph_signature* sigs = t->signatures(b->instance_, &count);
  if (count > 0 && sigs == nullptr) invalid_argument(where + ": signatures() returned null");
  std::vector<SubgraphSignature> reported;
  for (std::size_t i = 0; i < count; ++i) {
    const staticlm_subgraph_signature& s = sigs[i];
    if (s.name == nullptr) invalid_argument(where + ": signature " + std::to_string(i) + " has a null name");
    SubgraphSignature sig{s.name, {}, {}};
    const std::string at = where + ": subgraph " + sig.name;
    if ((s.num_inputs > 0 && !s.inputs) || (s.num_outputs > 0 && !s.outputs)) invalid_argument(at + ": null tensor list");
    for (std::size_t j = 0; j < s.num_inputs; ++j) sig.inputs.push_back(plugin::spec_from_abi(s.inputs[j], at + ": input"));
    for (std::size_t j = 0; j < s.num_outputs; ++j) {
      sig.outputs.push_back(plugin::spec_from_abi(s.outputs[j], at + ": output"));
    }
    reported.push_back(std::move(sig));
  }
  b->signatures_ = check_against_contract(reported, gemma4_subgraph_signatures(config, layers, profile), where);
  return b;
}

PluginBackend::~PluginBackend() {
  if (instance_ != nullptr) table_->destroy(instance_);
  if (library_ != nullptr) dlclose(library_);
}

void PluginBackend::run(const std::string& name, std::span<const TensorView> inputs,
                        std::span<const TensorBuffer> outputs) {
  check_subgraph_call(signature(name), inputs, outputs);
  std::vector<staticlm_tensor_buffer> in, out;
  for (const TensorView& v : inputs) in.push_back(plugin::abi_buffer(v.dtype, v.shape, v.data));
  for (const TensorBuffer& b : outputs) out.push_back(plugin::abi_buffer(b.dtype, b.shape, b.data));
  if (table_->run(instance_, name.c_str(), in.data(), in.size(), out.data(), out.size()) != 0) {
    invalid_argument(name_ + ": " + name + ": " + table_->last_error(instance_));
  }
}

}  // namespace staticlm
