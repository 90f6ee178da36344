// Prefill / vision GEMM for quantized weights (I8, I4, U4, U8) with AVX-512 VNNI (`vpdpbusd`, 64
// u8 x s8 multiply-adds per instruction, twice the bf16 dot product's rate). Activation rows are
// quantized to int8 in groups of kVnniGroup as the decode GEMV does (gemv_vnni.h); each group is
// accumulated in int32 and scaled into f32. Error bound as the GEMV's: at most sum_i |w_i| x
// (half the step of x's group) per output. Only call when vnni_kernels() and
// int8_gemm_supported().
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/gemm.h"
#include "base/thread_pool.h"

namespace staticlm::cpu {

// n activation rows quantized for gemm_int8.
struct Int8Rows {
  std::int64_t n = 0, k = 0;
  std::vector<std::uint32_t> quads;  // [n][k / 4]: four s8 values each, in k order
  std::vector<float> scale;          // [n][k / 32]
  std::vector<std::int32_t> sum;     // [n][k / 32]: sum of the group's int8 values
  std::vector<float> total;          // [n]: sum of the dequantized row (for zero points)
};

// True when gemm_int8 handles weights of `wtype` with `k` input columns (quantized, k a
// multiple of 32).
bool int8_gemm_supported(DType wtype, std::int64_t k);

// x [n, k] -> out, rows split over the pool.
void prepare_int8_rows(const float* x, std::int64_t n, std::int64_t k, Int8Rows& out, ThreadPool* pool);

// y[:, j0:j1] for every row of x against the quantized matrix in `a` (a.y, a.ldy for the output).
void gemm_int8(const Int8Rows& x, const GemmArgs& a, std::int64_t j0, std::int64_t j1);

}  // namespace staticlm::cpu
