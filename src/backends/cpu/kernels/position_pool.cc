#include "backends/cpu/kernels/position_pool.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace staticlm::cpu {

std::int64_t pool_by_positions(const float* x, const std::int64_t* positions, std::int64_t n, std::int64_t d,
                               std::int64_t k, float* out, std::int64_t max_cells, std::vector<float>& scratch) {
  if (k <= 0) invalid_argument("vision pooling: kernel size " + std::to_string(k) + ", expected a positive size");
  std::int64_t max_x = 0, max_y = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t px = positions[r * 2], py = positions[r * 2 + 1];
    if (px < -1 || py < -1) {
      invalid_argument("vision pooling: patch " + std::to_string(r) + " has position (" + std::to_string(px) + ", " +
                       std::to_string(py) + "), expected coordinates >= 0, or (-1, -1) for padding");
    }
    max_x = std::max(max_x, px);
    max_y = std::max(max_y, py);
  }
  const std::int64_t width = (max_x + 1) / k;  // cells per row (pw // k)
  const std::int64_t cells = max_x / k + width * (max_y / k) + 1;  // largest cell index + 1
  // Sums in f32 as upstream (a one-hot matmul in float32).
  scratch.assign(static_cast<std::size_t>(cells * d), 0.0f);
  std::vector<char> used(static_cast<std::size_t>(cells), 0);
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t px = std::max<std::int64_t>(positions[r * 2], 0);
    const std::int64_t py = std::max<std::int64_t>(positions[r * 2 + 1], 0);
    const std::int64_t cell = px / k + width * (py / k);
    used[static_cast<std::size_t>(cell)] = 1;
    const bool padding = positions[r * 2] == -1 && positions[r * 2 + 1] == -1;
    if (padding) continue;  // a zeroed row adds nothing
    float* acc = scratch.data() + cell * d;
    for (std::int64_t j = 0; j < d; ++j) acc[j] += x[r * d + j];
  }
  const float inv = 1.0f / static_cast<float>(k * k);
  std::int64_t count = 0;
  for (std::int64_t c = 0; c < cells; ++c) {
    if (!used[static_cast<std::size_t>(c)]) continue;
    if (count == max_cells) {
      invalid_argument("vision pooling: the patch positions fill more than " + std::to_string(max_cells) +
                       " pooled cells");
    }
    for (std::int64_t j = 0; j < d; ++j) out[count * d + j] = scratch[c * d + j] * inv;
    ++count;
  }
  return count;
}

}  // namespace staticlm::cpu
