// Dense matmul of f32 activations with a weight matrix stored as bf16, f16 or f32 in the
// Hugging Face nn.Linear layout [out, in] (y = x W^T). All arithmetic is f32. The weight is
// borrowed (usually a view into the memory-mapped checkpoint); nothing is copied at load.
#pragma once

#include <cstdint>
#include <string>

#include "base/thread_pool.h"
#include "tensor/tensor.h"

namespace staticlm::cpu {

struct WeightMatrix {
  DType dtype = DType::kF32;  // kF32, kF16 or kBF16
  std::int64_t rows = 0;      // out features
  std::int64_t cols = 0;      // in features
  const void* data = nullptr;  // not owned
};

// Checks that `view` is a rank-2 float tensor of [rows, cols] (either may be -1: any) and
// returns it as a WeightMatrix; kInvalidFile naming `name` otherwise.
WeightMatrix weight_matrix(const TensorView& view, const std::string& name, std::int64_t rows = -1,
                           std::int64_t cols = -1);

// Row r of w converted to f32: out[cols].
void weight_row_f32(const WeightMatrix& w, std::int64_t r, float* out);

// y [n, w.rows] = x [n, w.cols] . w^T. y must not alias x. With a pool, output rows are split
// across its threads in blocks; every output is computed the same way either way.
void matmul(const float* x, std::int64_t n, const WeightMatrix& w, float* y, ThreadPool* pool = nullptr);

}  // namespace staticlm::cpu
