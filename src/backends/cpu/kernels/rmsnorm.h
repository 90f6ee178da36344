// RMSNorm as Gemma 4 defines it (spec/gemma4.md 2.1): y = x * (mean(x^2) + eps)^-0.5 * w, with
// the weight used as is (not 1 + w) and optional (the weightless V norm). f32 throughout.
#pragma once

#include <cstdint>

namespace staticlm::cpu {

// Normalises `rows` vectors of `dim` floats; weight [dim] or nullptr. y may alias x.
void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float eps, float* y);

}  // namespace staticlm::cpu
