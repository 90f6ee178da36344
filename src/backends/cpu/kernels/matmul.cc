#include "backends/cpu/kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "backends/cpu/kernels/dot.h"

namespace staticlm::cpu {

namespace {


// Output rows converted per block and reused for every input row.
constexpr std::int64_t kRowBlock = 16;

}  // namespace

WeightMatrix weight_matrix(const TensorView& view, const std::string& name, std::int64_t rows, std::int64_t cols) {
  if (view.dtype != DType::kF32 && view.dtype != DType::kF16 && view.dtype != DType::kBF16) {
    invalid_file("weight " + name + ": dtype " + dtype_name(view.dtype) + ", expected F32, F16 or BF16");
  }
  if (view.shape.rank() != 2 || (rows >= 0 && view.shape[0] != rows) || (cols >= 0 && view.shape[1] != cols)) {
    invalid_file("weight " + name + ": shape " + view.shape.to_string() + ", expected [" +
                 (rows >= 0 ? std::to_string(rows) : std::string("*")) + ", " +
                 (cols >= 0 ? std::to_string(cols) : std::string("*")) + "]");
  }
  return {view.dtype, view.shape[0], view.shape[1], view.data};
}

void weight_row_f32(const WeightMatrix& w, std::int64_t r, float* out) {
  const std::int64_t n = w.cols;
  switch (w.dtype) {
    case DType::kF32:
      std::memcpy(out, static_cast<const float*>(w.data) + r * n, static_cast<std::size_t>(n) * 4);
      return;
    case DType::kBF16: {
      const auto* p = static_cast<const std::uint16_t*>(w.data) + r * n;
      for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    case DType::kF16: {
      const auto* p = static_cast<const std::uint16_t*>(w.data) + r * n;
      for (std::int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return;
    }
    default:
      internal_error(std::string("weight_row_f32: dtype ") + dtype_name(w.dtype));
  }
}

void matmul(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool) {
  const std::int64_t in = w.cols, out = w.rows;
  // Parallel over blocks of output rows; each block's weights are widened once and reused for
  // every input row.
  const std::int64_t blocks = (out + kRowBlock - 1) / kRowBlock;
  parallel_for(pool, blocks, 1, static_cast<double>(kRowBlock * in * n), [&](std::int64_t b0, std::int64_t b1, int) {
    std::vector<float> block;
    if (w.dtype != DType::kF32) block.resize(static_cast<std::size_t>(kRowBlock * in));
    for (std::int64_t b = b0; b < b1; ++b) {
      const std::int64_t o0 = b * kRowBlock, rows = std::min(kRowBlock, out - o0);
      const float* wb = static_cast<const float*>(w.data) + o0 * in;
      if (w.dtype != DType::kF32) {
        for (std::int64_t j = 0; j < rows; ++j) weight_row_f32(w, o0 + j, block.data() + j * in);
        wb = block.data();
      }
      for (std::int64_t r = 0; r < n; ++r) {
        for (std::int64_t j = 0; j < rows; ++j) y[r * out + o0 + j] = dot(x + r * in, wb + j * in, in);
      }
    }
  });
}

}  // namespace staticlm::cpu
