// Placeholder for the CPU vision tower (the vision issue replaces this file).
#include "backends/cpu/cpu_backend.h"
#include "base/error.h"

namespace staticlm::cpu {

void run_vision_prefill(std::span<const TensorView>, std::span<const TensorBuffer>) {
  unsupported("subgraph vision_prefill is not implemented by the cpu backend yet; image prompts cannot run");
}

}  // namespace staticlm::cpu
