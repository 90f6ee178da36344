// ObservedBackend: a Backend decorator that runs every call on the backend it wraps, then shows
// the call (graph name, call number, the inputs and outputs just computed) to each observer. The
// inspector reads intermediate tensors this way and the recorder writes them to disk; neither
// changes what is computed.
//
// Ownership: borrows the wrapped backend, which must outlive it. The views an observer receives
// are only valid during the callback.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "staticlm/backend.h"

namespace staticlm {

struct SubgraphCall {
  const SubgraphSignature& signature;  // names the graph and its tensors, in call order
  std::int64_t index = 0;              // 0, 1, 2, ... over every call through this backend
  std::span<const TensorView> inputs;
  std::span<const TensorBuffer> outputs;  // already computed
};

class ObservedBackend : public Backend {
 public:
  using Observer = std::function<void(const SubgraphCall&)>;

  explicit ObservedBackend(Backend& inner) : inner_(inner) {}
  // Observers run in the order they were added, after the wrapped call returns.
  void add_observer(Observer observer) { observers_.push_back(std::move(observer)); }
  std::int64_t calls() const { return calls_; }
  Backend& inner() { return inner_; }

  std::string name() const override { return inner_.name(); }
  const SubgraphProfile& profile() const override { return inner_.profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return inner_.signatures(); }
  void run(const std::string& name, std::span<const TensorView> inputs,
           std::span<const TensorBuffer> outputs) override;

 private:
  Backend& inner_;
  std::vector<Observer> observers_;
  std::int64_t calls_ = 0;
};

}  // namespace staticlm
