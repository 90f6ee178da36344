// The loader of back-end plug-ins (staticlm/backend_plugin.h): opens a shared object, checks
// its entry point, ABI version and struct sizes, creates one instance for a checkpoint and
// profile and checks every signature it reports against the subgraph contract
// (subgraph_contract.h) before any graph runs. The result is an ordinary Backend whose graphs
// are the plug-in's (any subset of the contract; backend_factory.h adds the CPU fallback).
//
// Every refusal is kInvalidArgument, one line naming the plug-in file and what is wrong: the
// missing entry point, the version or struct size, the subgraph and tensor that differ from
// the contract, or the plug-in's own error message.
//
// Ownership: the PluginBackend owns the instance and keeps the shared object loaded until
// the instance is destroyed. Threading: one run() at a time (the ABI's rule).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"
#include "model/layer_table.h"
#include "staticlm/backend.h"
#include "staticlm/backend_plugin.h"

namespace staticlm {

using PluginOptionList = std::vector<std::pair<std::string, std::string>>;

class PluginBackend : public Backend {
 public:
  static std::unique_ptr<PluginBackend> load(const std::string& path, const PluginOptionList& options,
                                             const std::string& model_dir, const ModelConfig& config,
                                             const std::vector<LayerInfo>& layers, const SubgraphProfile& profile);
  ~PluginBackend() override;

  // "plugin:<file name>".
  std::string name() const override { return name_; }
  const SubgraphProfile& profile() const override { return profile_; }
  // The plug-in's graphs, in contract order.
  const std::vector<SubgraphSignature>& signatures() const override { return signatures_; }
  // Checks the call against the signature (check_subgraph_call), then runs it in the plug-in;
  // a failure there is kInvalidArgument "<plug-in>: <graph>: <its message>".
  void run(const std::string& name, std::span<const TensorView> inputs,
           std::span<const TensorBuffer> outputs) override;

 private:
  PluginBackend() = default;

  std::string path_, name_;
  void* library_ = nullptr;  // dlopen handle
  const staticlm_backend_plugin* table_ = nullptr;
  staticlm_backend* instance_ = nullptr;
  SubgraphProfile profile_;
  std::vector<SubgraphSignature> signatures_;
};

// Checks a plug-in's reported signatures against the contract's (`where` prefixes messages):
// every name is a contract subgraph, reported once, with the contract's inputs and outputs
// (count, names, dtypes, shapes, dynamic axes). Returns them in contract order. Throws
// kInvalidArgument "<where>: subgraph lm_head: output logits: shape [1,1,300], expected [1,1,262144]".
std::vector<SubgraphSignature> check_against_contract(const std::vector<SubgraphSignature>& reported,
                                                      const std::vector<SubgraphSignature>& contract,
                                                      const std::string& where);

}  // namespace staticlm
