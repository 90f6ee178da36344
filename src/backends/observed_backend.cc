#include "backends/observed_backend.h"

namespace staticlm {

void ObservedBackend::run(const std::string& name, std::span<const TensorView> inputs,
                          std::span<const TensorBuffer> outputs) {
  inner_.run(name, inputs, outputs);
  const SubgraphCall call{inner_.signature(name), calls_++, inputs, outputs};
  for (const Observer& o : observers_) o(call);
}

}  // namespace staticlm
