// Elementwise activations of the text and vision MLPs.
#pragma once

#include <cstdint>

namespace staticlm::cpu {

// gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
float gelu_tanh(float x);

// gate[i] = gelu_tanh(gate[i]) * up[i] for i < n (the gated MLP's middle), in place.
// SIMD (Highway tanh) unless the scalar target is pinned.
void gelu_tanh_mul(float* gate, const float* up, std::int64_t n);
// The scalar reference (std::tanh).
void gelu_tanh_mul_reference(float* gate, const float* up, std::int64_t n);

}  // namespace staticlm::cpu
