#include "api/vision_tap.h"

#include <chrono>

#include "backends/subgraph_contract.h"

namespace staticlm::api {

void VisionTap::run(const std::string& name, std::span<const TensorView> inputs, std::span<const TensorBuffer> outputs) {
  if (name != kVisionPrefill) return inner_.run(name, inputs, outputs);
  const auto t0 = std::chrono::steady_clock::now();
  inner_.run(name, inputs, outputs);
  vision_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto* out = static_cast<const float*>(outputs[0].data);
  embeds_.assign(out, out + outputs[0].shape.numel());
  rows_ = outputs[0].shape[0];
}

}  // namespace staticlm::api
