#include "backends/cpu/kernels/rmsnorm.h"

#include <cmath>

namespace staticlm::cpu {

void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float eps, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0;  // the mean of squares in double: no cancellation, order-independent
    for (std::int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i]) * xr[i];
    const float ms = static_cast<float>(sum / static_cast<double>(dim));
    const float inv = 1.0f / std::sqrt(ms + eps);
    if (weight) {
      for (std::int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * inv * weight[i];
    } else {
      for (std::int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * inv;
    }
  }
}

}  // namespace staticlm::cpu
