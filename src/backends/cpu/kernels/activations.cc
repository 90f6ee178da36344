#include "backends/cpu/kernels/activations.h"

#include <cmath>

namespace staticlm::cpu {

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

void gelu_tanh_mul(float* gate, const float* up, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
}

}  // namespace staticlm::cpu
