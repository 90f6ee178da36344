// Decode GEMV for quantized weights (I8 q8, I4 q4, U4 / U8 npu-w4) with AVX-512 VNNI integer dot
// products (`vpdpbusd`, 64 multiply-adds of u8 x s8 per instruction). The activation row is
// quantized once per call to int8 in groups of kVnniGroup (symmetric, scale = max|x| / 127), in
// the element order the weight's bytes unpack to; each weight row is then multiplied in integers
// and scaled in f32 once per group. Error against the f32 activations: at most
// sum_i |w_i| * scale(group of i) / 2 per output (the rounding of x), see the kernel tests.
// Only call when vnni_kernels() and vnni_gemv_supported().
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/gemm.h"

namespace staticlm::cpu {

inline constexpr std::int64_t kVnniGroup = 32;

// One activation row prepared for the weights of one dtype.
struct VnniRow {
  DType wtype = DType::kI8;
  std::int64_t k = 0;
  std::vector<std::int8_t> xq;           // [k], 64-element blocks in the order the weights unpack to
  std::vector<float> group_scale;        // [k / kVnniGroup]
  std::vector<float> lane_scale;         // [k / 4]: the scale of the group each 4-byte lane of xq is in
  std::vector<std::int32_t> lane_init;   // [k / 4]: -offset * (sum of the lane's 4 values), offset the
                                         // bias that makes the weights unsigned (128 I8, 8 I4, else 0)
  float total = 0;                       // sum of the dequantized x (for zero points)
};

// x[0, kVnniGroup) -> q (round to nearest even, clamped to +-127) with scale max|x| / 127 (0 for
// an all-zero group), returned; *sum = the sum of q. AVX-512: only when vnni_kernels().
float quantize_group_s8(const float* x, std::int8_t* q, int* sum);

// True when the VNNI GEMV handles weights of `wtype` with `k` input columns (quantized, k a
// multiple of 64).
bool vnni_gemv_supported(DType wtype, std::int64_t k);

// x [k] -> out, for weights of `wtype`.
void prepare_vnni_row(const float* x, std::int64_t k, DType wtype, VnniRow& out);

// y[j] = x . W[j] for rows [j0, j1) of the quantized matrix in `a` (a.w, a.wtype, a.k, a.scales,
// a.zero_points), writing y (not a.y).
void gemv_vnni(const VnniRow& x, const GemmArgs& a, float* y, std::int64_t j0, std::int64_t j1);

}  // namespace staticlm::cpu
