// Reading weights by name for the CPU backend: the getter type, per-channel vectors widened to
// f32, and matrices as views into the checkpoint (or into an aligned copy when the file places
// a tensor at an address its element type cannot be read from).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/kernels/matmul.h"
#include "tensor/tensor.h"

namespace staticlm::cpu {

// Returns the tensor of a full safetensors name; throws (naming it) when absent. The tensors it
// returns must outlive the weights built from them.
using WeightGetter = std::function<TensorView(const std::string& name)>;

// A float vector of n elements (rank <= 1) as f32; kInvalidFile naming the tensor otherwise.
std::vector<float> weight_vector_f32(const WeightGetter& get, const std::string& name, std::int64_t n);

// A [rows, cols] matrix viewing `view`; a misaligned view is first copied into `copies`, which
// then owns the bytes the matrix points into.
WeightMatrix aligned_weight_matrix(TensorView view, const std::string& name, std::int64_t rows, std::int64_t cols,
                                   std::vector<std::unique_ptr<Tensor>>& copies);

// The matrix `name` of `view`: float as aligned_weight_matrix; quantized (I8 / I4 / U4 / U8,
// docs/quantization.md) with its scales read from `name`_scale and, for U4 / U8, its zero points
// from `name`_zero_point (kInvalidFile naming a missing or misshapen companion tensor).
WeightMatrix load_weight_matrix(const WeightGetter& get, TensorView view, const std::string& name, std::int64_t rows,
                                std::int64_t cols, std::vector<std::unique_ptr<Tensor>>& copies);

}  // namespace staticlm::cpu
