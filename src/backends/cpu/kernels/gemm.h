// Single-threaded matrix kernels under matmul() and attention(): y = x W^T on a range of output
// columns, with explicit leading dimensions so attention can multiply by slices of K and V^T.
// matmul() splits output columns over the pool and calls these; attention() calls them from
// inside its own parallel loop. Internal to the CPU backend.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "tensor/dtype.h"

namespace staticlm::cpu {

struct GemmArgs {
  const float* x = nullptr;  // [n, k], row r at x + r * ldx
  std::int64_t ldx = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  const void* w = nullptr;  // [m, k] of `wtype` (F32, F16, BF16, I8, I4, U4, U8), row j at w + j * ldw elements
  DType wtype = DType::kF32;
  std::int64_t ldw = 0;
  float* y = nullptr;  // [n, m], row r at y + r * ldy
  std::int64_t ldy = 0;
  const void* scales = nullptr;  // quantized weights (I8, I4, U4, U8): WeightMatrix::scales; ldw = k
  const std::uint8_t* zero_points = nullptr;  // U4, U8: WeightMatrix::zero_points
};

// True when y[:, j0:j1] needs no products: no columns or rows, or k = 0 (y is then zeroed there).
// The GEMMs' first check.
inline bool gemm_without_products(const GemmArgs& a, std::int64_t j0, std::int64_t j1) {
  if (j1 <= j0 || a.n <= 0) return true;
  if (a.k > 0) return false;
  for (std::int64_t r = 0; r < a.n; ++r) std::fill(a.y + r * a.ldy + j0, a.y + r * a.ldy + j1, 0.0f);
  return true;
}

// y[:, j0:j1] for every row, Highway f32 FMA micro-kernel over packed weight panels (weights
// widened to f32 when packed). Column results do not depend on n, j0 or j1.
void gemm_f32(const GemmArgs& a, std::int64_t j0, std::int64_t j1);

// Rows 0..n-1 of x, one at a time, against W rows [j0, j1): the memory-bound decode path. Weights
// are widened in registers, activations stay f32.
void gemv_f32(const GemmArgs& a, std::int64_t j0, std::int64_t j1);

// x rounded to bf16 values (round to nearest even), kept as f32: out[i] for i < count.
void round_to_bf16(const float* x, std::int64_t count, float* out);

// AVX-512 BF16 (vdpbf16ps) GEMM for BF16 weights (or quantized ones, dequantized and rounded to
// bf16 as they are packed): x must already be bf16 pairs, row r at
// xb + r * ldxb uint32 (k rounded up to even, zero padded). Only call when bf16_dot_kernels().
void gemm_bf16_dot(const std::uint32_t* xb, std::int64_t ldxb, const GemmArgs& a, std::int64_t j0, std::int64_t j1);
// x [n, k] f32 -> bf16 pairs as gemm_bf16_dot reads them (row stride (k + 1) / 2).
void pack_bf16_pairs(const float* x, std::int64_t n, std::int64_t k, std::uint32_t* out);
// Weight columns [j0, j0 + nc) of `a` (BF16, or quantized: dequantized, then rounded to bf16),
// pairs [p0, p0 + kp) of each, as the bf16 GEMMs read them: panel[c / kGemmColumnBlock][p]
// [c % kGemmColumnBlock], each block of columns kp_stride pairs long (pairs kp.. zero, as are
// columns past nc). p0 a multiple of 16 (a q4 group is 16 pairs).
void pack_bf16_panel(const GemmArgs& a, std::int64_t j0, std::int64_t nc, std::int64_t p0, std::int64_t kp,
                     std::int64_t kp_stride, std::uint32_t* panel);

// A 64-byte-aligned buffer that grows on demand and is kept for the next call: each thread's
// packed weight panel.
struct AlignedScratch {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data;
  std::size_t bytes = 0;
  void* get(std::size_t n) {
    if (n > bytes) {
      n = (n + 63) / 64 * 64;
      data.reset(std::aligned_alloc(64, n));
      bytes = n;
    }
    return data.get();
  }
};

// Micro-panel width of the GEMMs: output columns handled together (a multiple of every
// target's vector length); matmul() splits work across threads on multiples of it.
inline constexpr std::int64_t kGemmColumnBlock = 32;

}  // namespace staticlm::cpu
