// RoutedBackend: the whole contract over a primary backend (a plug-in) that may run only some
// graphs and an optional fallback (the CPU back end) that runs the rest. It counts the calls
// each side ran, so the CLI can say which graphs ran where.
//
// Ownership: owns both backends. Threading: one run() at a time, like any backend.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/backend.h"

namespace staticlm {

class RoutedBackend : public Backend {
 public:
  // contract: every signature the host will call. Throws kInvalidArgument naming the missing
  // graphs (compact_graph_list) when fallback is null and the primary lacks some.
  RoutedBackend(std::unique_ptr<Backend> primary, std::unique_ptr<Backend> fallback,
                std::vector<SubgraphSignature> contract);

  std::string name() const override { return primary_->name(); }
  const SubgraphProfile& profile() const override { return primary_->profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return contract_; }
  void run(const std::string& name, std::span<const TensorView> inputs,
           std::span<const TensorBuffer> outputs) override;

  Backend& primary() { return *primary_; }
  // Graph names each side runs, in contract order.
  const std::vector<std::string>& primary_graphs() const { return primary_graphs_; }
  const std::vector<std::string>& fallback_graphs() const { return fallback_graphs_; }
  std::int64_t primary_calls() const { return primary_calls_; }
  std::int64_t fallback_calls() const { return fallback_calls_; }
  // "backend: plugin:libX.so ran lm_head, token_embedding (12 calls); cpu fallback ran
  // decoder_layer_prefill_{0-34}, ... (140 calls)".
  std::string placement(bool with_calls = true) const;

 private:
  std::unique_ptr<Backend> primary_, fallback_;
  std::vector<SubgraphSignature> contract_;
  std::vector<std::string> primary_graphs_, fallback_graphs_;
  std::int64_t primary_calls_ = 0, fallback_calls_ = 0;
};

// Graph names with runs of numbered layers folded: "decoder_layer_prefill_{0-34},
// decoder_layer_decode_{0-34}, lm_head".
std::string compact_graph_list(const std::vector<std::string>& names);

}  // namespace staticlm
