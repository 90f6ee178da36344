#include "backends/cpu/kernels/rope2d.h"

#include <cmath>
#include <vector>

namespace staticlm::cpu {

void build_rope2d_tables(const std::int64_t* positions, std::int64_t n, std::int64_t hd, double theta, float* cos,
                         float* sin) {
  const std::int64_t half = hd / 2, quarter = hd / 4;
  std::vector<double> inv(static_cast<std::size_t>(quarter));
  for (std::int64_t i = 0; i < quarter; ++i) {
    inv[static_cast<std::size_t>(i)] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(half));
  }
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t axis = 0; axis < 2; ++axis) {
      // Upstream computes the angle in f32 (position * inv_freq); so do we.
      const float pos = static_cast<float>(positions[r * 2 + axis]);
      for (std::int64_t i = 0; i < quarter; ++i) {
        const float angle = pos * static_cast<float>(inv[static_cast<std::size_t>(i)]);
        const float c = std::cos(angle), s = std::sin(angle);
        float* cr = cos + r * hd + axis * half;
        float* sr = sin + r * hd + axis * half;
        cr[i] = cr[i + quarter] = c;
        sr[i] = sr[i + quarter] = s;
      }
    }
  }
}

void apply_rope2d(float* x, std::int64_t n, std::int64_t heads, std::int64_t hd, const float* cos, const float* sin) {
  const std::int64_t half = hd / 2, quarter = hd / 4;
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t h = 0; h < heads; ++h) {
      float* v = x + (r * heads + h) * hd;
      for (std::int64_t axis = 0; axis < 2; ++axis) {
        float* part = v + axis * half;
        const float* c = cos + r * hd + axis * half;
        const float* s = sin + r * hd + axis * half;
        for (std::int64_t j = 0; j < quarter; ++j) {
          const float a = part[j], b = part[j + quarter];
          part[j] = a * c[j] - b * s[j];
          part[j + quarter] = b * c[j + quarter] + a * s[j + quarter];
        }
      }
    }
  }
}

}  // namespace staticlm::cpu
