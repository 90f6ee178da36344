#include "backends/cpu/kernels/rope_apply.h"

namespace staticlm::cpu {

void apply_rope(float* x, std::int64_t rows, std::int64_t heads, std::int64_t hd, const float* cos,
                const float* sin, RopeSine sine) {
  const std::int64_t half = hd / 2;
  // kHf rotates with [-x2, x1]; kPreNegatedSin with [x2, x1] (its sin already carries the sign).
  const float first_sign = sine == RopeSine::kHf ? -1.0f : 1.0f;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* c = cos + r * hd;
    const float* s = sin + r * hd;
    for (std::int64_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * hd;
      for (std::int64_t j = 0; j < half; ++j) {
        const float x1 = v[j], x2 = v[half + j];
        v[j] = x1 * c[j] + first_sign * x2 * s[j];
        v[half + j] = x2 * c[half + j] + x1 * s[half + j];
      }
    }
  }
}

}  // namespace staticlm::cpu
