#include "backends/cpu/kernels/embedding.h"

#include <string>

#include "base/error.h"

namespace staticlm::cpu {

void embedding_lookup(const WeightMatrix& table, std::span<const std::int64_t> ids, float scale, float* out) {
  const std::int64_t width = table.cols;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int64_t id = ids[i];
    if (id < 0 || id >= table.rows) {
      out_of_range("token id " + std::to_string(id) + " at position " + std::to_string(i) +
                   " is outside the vocabulary [0, " + std::to_string(table.rows) + ")");
    }
    float* row = out + static_cast<std::int64_t>(i) * width;
    weight_row_f32(table, id, row);
    for (std::int64_t j = 0; j < width; ++j) row[j] *= scale;
  }
}

}  // namespace staticlm::cpu
