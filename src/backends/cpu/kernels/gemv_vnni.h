// Decode GEMV for quantized weights (I8 q8, I4 q4, U4 / U8 npu-w4) with AVX-512 VNNI integer dot
// products (`vpdpbusd`, 64 multiply-adds of u8 x s8 per instruction). The activation row is
// quantized once per call to int8 in groups of kVnniGroup values (symmetric, scale = max|x| / 127),
// in the element order the weight's bytes unpack to. The groups are chosen so the integer sums of
// a whole chunk of kVnniChunk columns can be converted to f32 once:
// - I8, U8, U4 (one weight scale per row): group (chunk, lane) = the values that meet 32-bit lane
//   `lane` of the zmm registers over the chunk (8 blocks of 64 bytes: 4 consecutive columns per
//   block; U4: 8 consecutive columns per 128). Each lane accumulates in int32 over the chunk and
//   is scaled once.
// - I4 (a weight scale per 32 columns): group = 32 consecutive columns, as the weight's groups,
//   so a lane of one 128-column load sees one weight group; scaled once per load.
// q8 (I8, whose GEMV has arithmetic to spare) also multiplies the activations' int8 residual
// (rounded to int8 in steps of 1/254), so its activations keep about 15 bits: x = scale * (xq + xq_fine / 254).
// Error against the f32 activations: at most sum_i |w_i| * scale(group of i) / 2 per output (the
// rounding of x; q8: / 254 more), see the kernel tests. Only call when vnni_kernels() and vnni_gemv_supported().
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/gemm.h"

namespace staticlm::cpu {

inline constexpr std::int64_t kVnniGroup = 32;
inline constexpr std::int64_t kVnniChunk = 512;  // columns whose integer sums are scaled together
inline constexpr float kFineSteps = 254.0f;       // I8: the residual's steps per activation step

// One activation row prepared for the weights of one dtype.
struct VnniRow {
  DType wtype = DType::kI8;
  std::int64_t k = 0;
  std::vector<std::int8_t> xq;           // [k], in the order the weight bytes unpack to
  std::vector<float> scale;              // I4: [k / 32] per group of columns; else [chunks * 16] per
                                         // (chunk, lane)
  std::vector<std::int32_t> lane_init;   // I8: [chunks * 16] -128 * (sum of the lane group's values),
                                         // removing the +128 that makes the weights unsigned
  std::vector<float> group_bias;         // I4: [k / 32] -8 * scale * (sum of the group's values),
                                         // removing the +8 that makes the nibbles unsigned
  std::vector<std::int8_t> xq_fine;      // I8: [k] the residual x / scale - xq in 1/kFineSteps steps
  std::vector<std::int32_t> lane_init_fine;  // I8: as lane_init, for xq_fine
  float total = 0;                       // sum of the dequantized x (for zero points)
};

// x[0, kVnniGroup) -> q (round to nearest even, clamped to +-127) with scale max|x| / 127 (0 for
// an all-zero group), returned; *sum = the sum of q. AVX-512: only when vnni_kernels().
float quantize_group_s8(const float* x, std::int8_t* q, int* sum);

// True when the VNNI GEMV handles weights of `wtype` with `k` input columns (quantized, k a
// multiple of 64).
bool vnni_gemv_supported(DType wtype, std::int64_t k);

// The activation group column e of x falls in, for weights of `wtype` with k columns: its 32
// values share one int8 scale (I4: e / 32; else chunk * 16 + lane, as described above).
std::int64_t vnni_group_of(std::int64_t e, std::int64_t k, DType wtype);

// x [k] -> out, for weights of `wtype`.
void prepare_vnni_row(const float* x, std::int64_t k, DType wtype, VnniRow& out);

// y[j] = x . W[j] for rows [j0, j1) of the quantized matrix in `a` (a.w, a.wtype, a.k, a.scales,
// a.zero_points), writing y (not a.y).
void gemv_vnni(const VnniRow& x, const GemmArgs& a, float* y, std::int64_t j0, std::int64_t j1);

}  // namespace staticlm::cpu
