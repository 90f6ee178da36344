#include "backends/cpu/kernels/rmsnorm.h"

#include <cmath>

namespace staticlm::cpu {

void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float eps, float* y) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // The mean of squares in double (no cancellation; the order of the additions changes only
    // the last bits of the double), in kChains independent sums: one chain waited on the add's
    // latency for every element (1-2% of a quantized decode step, 8 norms per layer).
    constexpr int kChains = 8;
    double part[kChains] = {};
    std::int64_t i = 0;
    for (; i + kChains <= dim; i += kChains) {
      for (int c = 0; c < kChains; ++c) part[c] += static_cast<double>(xr[i + c]) * xr[i + c];
    }
    for (; i < dim; ++i) part[0] += static_cast<double>(xr[i]) * xr[i];
    double sum = 0;
    for (double v : part) sum += v;
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
