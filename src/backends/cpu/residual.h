// The residual add of the decoder and vision layers: x += y, element by element.
#pragma once

#include <cstdint>

namespace staticlm::cpu {

inline void add_into(float* x, const float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace staticlm::cpu
