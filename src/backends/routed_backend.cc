#include "backends/routed_backend.h"

#include <cctype>

#include "base/error.h"

namespace staticlm {

namespace {

// "decoder_layer_prefill_12" -> {"decoder_layer_prefill_", 12}; no trailing number: -1.
std::pair<std::string, long> split_layer(const std::string& name) {
  std::size_t i = name.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1]))) --i;
  if (i == name.size() || i == 0 || name[i - 1] != '_') return {name, -1};
  return {name.substr(0, i), std::stol(name.substr(i))};
}

}  // namespace

std::string compact_graph_list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size();) {
    const auto [prefix, first] = split_layer(names[i]);
    std::size_t j = i + 1;
    long last = first;
    while (first >= 0 && j < names.size()) {
      const auto [p, n] = split_layer(names[j]);
      if (p != prefix || n != last + 1) break;
      last = n;
      ++j;
    }
    if (!out.empty()) out += ", ";
    out += j - i > 1 ? prefix + "{" + std::to_string(first) + "-" + std::to_string(last) + "}" : names[i];
    i = j;
  }
  return out;
}

RoutedBackend::RoutedBackend(std::unique_ptr<Backend> primary, std::unique_ptr<Backend> fallback,
                             std::vector<SubgraphSignature> contract)
    : primary_(std::move(primary)), fallback_(std::move(fallback)), contract_(std::move(contract)) {
  for (const SubgraphSignature& s : contract_) (primary_->has(s.name) ? primary_graphs_ : fallback_graphs_).push_back(s.name);
  if (!fallback_ && !fallback_graphs_.empty()) {
    invalid_argument(primary_->name() + " does not provide " + compact_graph_list(fallback_graphs_) +
                     "; give --fallback cpu to run them on the CPU back end");
  }
}

void RoutedBackend::run(const std::string& name, std::span<const TensorView> inputs,
                        std::span<const TensorBuffer> outputs) {
  if (primary_->has(name)) {
    ++primary_calls_;
    return primary_->run(name, inputs, outputs);
  }
  if (!fallback_) invalid_argument(primary_->name() + ": no subgraph " + name);
  ++fallback_calls_;
  fallback_->run(name, inputs, outputs);
}

std::string RoutedBackend::placement(bool with_calls) const {
  std::string s = "backend: " + primary_->name() + " ran " +
                   (primary_graphs_.empty() ? std::string("no graphs") : compact_graph_list(primary_graphs_)) +
                   (with_calls ? " (" + std::to_string(primary_calls_) + " calls)" : "");
  if (fallback_) {
    s += "; " + fallback_->name() + " fallback ran " +
         (fallback_graphs_.empty() ? std::string("no graphs") : compact_graph_list(fallback_graphs_)) +
         (with_calls ? " (" + std::to_string(fallback_calls_) + " calls)" : "");
  }
  return s;
}

}  // namespace staticlm
