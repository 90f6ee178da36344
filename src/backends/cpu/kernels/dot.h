// The f32 dot product every CPU kernel reduces with.
#pragma once

#include <cstdint>

namespace staticlm::cpu {

// Eight independent partial sums let the compiler vectorise the reduction without
// reassociating a single accumulator; the fixed summation order keeps results reproducible.
inline float dot(const float* a, const float* b, std::int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float tail = 0;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

}  // namespace staticlm::cpu
