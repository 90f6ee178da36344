// The AVX-512 BF16 GEMM: bf16 weights times activations rounded to bf16, f32 accumulation, with
// `vdpbf16ps` (32 multiply-adds per instruction). Highway 1.0.3 has no such op, so this file uses
// intrinsics in functions compiled for that target only; dispatch.cc calls it only on CPUs that
// have the instructions. Layout and blocking as gemm.cc, with k taken in pairs.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/gemm.h"
#include "base/half.h"
#include "quant/formats.h"

// GCC 12's AVX-512 headers start conversions and shifts from an undefined vector, which
// -Wmaybe-uninitialized reports once they are inlined here: a false alarm.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define STATICLM_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma,f16c")))

namespace staticlm::cpu {

namespace {

constexpr std::int64_t kNr = kGemmColumnBlock;  // two zmm of 16 f32 columns
constexpr std::int64_t kKp = 128;               // pairs of k per panel (256 elements)
constexpr std::int64_t kNc = 256;               // columns per panel: 256 x 256 x 2 B = 128 KiB
constexpr int kMr = 8;                          // 16 accumulators + 2 panel loads + 1 broadcast


// The pair (W[j][2p], W[j][2p + 1]) as one u32 (zero past k).
inline std::uint32_t weight_pair(const std::uint16_t* row, std::int64_t e, std::int64_t k) {
  if (e + 1 < k) {
    std::uint32_t v;
    std::memcpy(&v, row + e, 4);
    return v;
  }
  return e < k ? row[e] : 0u;
}

// The bf16 pair (lo, hi) of 16 lanes of f32 as u32 lanes.
// Word k of the pairs: lo's word k / 2 for even k, hi's (16 + k / 2) for odd k.
alignas(64) constexpr std::uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};

STATICLM_BF16_TARGET inline __m512i bf16_pairs(__m512 lo, __m512 hi) {
  // [lo | hi] as 32 bf16 words, then interleaved into (lo i, hi i) pairs.
  const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), words);
}

// Quantized rows' last pairs of a panel (fewer than 16 each), reused.
std::vector<std::uint32_t>& quantized_row_pairs() {
  static thread_local std::vector<std::uint32_t> pairs;
  return pairs;
}

// Elements [e, e + 32) of quantized row j (within the row; e a multiple of 32, so a q4 group)
// dequantized and rounded to 16 bf16 pairs in registers: a byte holds a pair of 4-bit values, two
// bytes a pair of 8-bit ones. Values and zero points are exact in f32; the product is rounded
// once, to bf16.
STATICLM_BF16_TARGET inline __m512i quantized_pairs16(const GemmArgs& a, std::int64_t j, std::int64_t e) {
  const auto* w = static_cast<const std::uint8_t*>(a.w);
  const bool nibbles = a.wtype == DType::kI4 || a.wtype == DType::kU4;
  const std::uint8_t* row = w + j * (nibbles ? a.k / 2 : a.k);
  const float row_scale = a.wtype == DType::kI4 ? 0.0f : static_cast<const float*>(a.scales)[j];
  const __m512 zero = _mm512_set1_ps(a.zero_points ? static_cast<float>(a.zero_points[j]) : 0.0f);
  const __m512i low = _mm512_set1_epi32(0xF), eight = _mm512_set1_epi32(8);
  {
    __m512i lo, hi;
    __m512 scale;
    if (nibbles) {
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + e / 2)));
      lo = _mm512_and_si512(b, low);
      hi = _mm512_srli_epi32(b, 4);
      if (a.wtype == DType::kI4) {  // two's complement nibbles
        lo = _mm512_sub_epi32(_mm512_xor_si512(lo, eight), eight);
        hi = _mm512_sub_epi32(_mm512_xor_si512(hi, eight), eight);
        const auto* sc = static_cast<const std::uint16_t*>(a.scales) + j * (a.k / quant::kQ4Group);
        scale = _mm512_set1_ps(_cvtsh_ss(sc[e / quant::kQ4Group]));  // f16 scale, widened exactly
      } else {
        scale = _mm512_set1_ps(row_scale);
      }
    } else {
      const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + e));
      if (a.wtype == DType::kI8) {
        const __m512i v = _mm512_cvtepi16_epi32(words);
        lo = _mm512_srai_epi32(_mm512_slli_epi32(v, 24), 24);
        hi = _mm512_srai_epi32(v, 8);
      } else {
        const __m512i v = _mm512_cvtepu16_epi32(words);
        lo = _mm512_and_si512(v, _mm512_set1_epi32(0xFF));
        hi = _mm512_srli_epi32(v, 8);
      }
      scale = _mm512_set1_ps(row_scale);
    }
    const __m512 flo = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(lo), zero), scale);
    const __m512 fhi = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(hi), zero), scale);
    return bf16_pairs(flo, fhi);
  }
}

// Pairs [p0, p0 + kp) of quantized row j as bf16 pairs (p0 a multiple of 16): 16 at a time in
// registers, the scalar dequantizer for the tail.
STATICLM_BF16_TARGET void quantized_pairs(const GemmArgs& a, std::int64_t j, std::int64_t p0, std::int64_t kp,
                                          std::uint32_t* out) {
  std::int64_t p = 0;
  for (; p + 16 <= kp && 2 * (p0 + p + 16) <= a.k; p += 16) {
    _mm512_storeu_si512(out + p, quantized_pairs16(a, j, 2 * (p0 + p)));
  }
  if (p < kp) {
    float tmp[2 * 128] = {};
    const std::int64_t e0 = 2 * (p0 + p), e1 = std::min(a.k, 2 * (p0 + kp));
    quant::dequantize_range(a.wtype, a.w, a.scales, a.zero_points, a.k, j, e0, e1, tmp);
    for (std::int64_t q = p; q < kp; ++q) {
      out[q] = static_cast<std::uint32_t>(f32_to_bf16(tmp[2 * (q - p)])) |
               (static_cast<std::uint32_t>(f32_to_bf16(tmp[2 * (q - p) + 1])) << 16);
    }
  }
}

// 16 rows of 16 u32 pairs, transposed: out[p * ld + i] = pair p of r[i]. Three rounds of
// shuffles (32-bit, 64-bit, 128-bit lanes).
STATICLM_BF16_TARGET inline void transpose16(const __m512i r[16], std::uint32_t* out, std::int64_t ld) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4i + c], 128-bit lane L: pair 4L + c of rows 4i..4i+3.
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44),
                  v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
    _mm512_storeu_si512(out + c * ld, _mm512_shuffle_i32x4(v0, v2, 0x88));
    _mm512_storeu_si512(out + (4 + c) * ld, _mm512_shuffle_i32x4(v0, v2, 0xDD));
    _mm512_storeu_si512(out + (8 + c) * ld, _mm512_shuffle_i32x4(v1, v3, 0x88));
    _mm512_storeu_si512(out + (12 + c) * ld, _mm512_shuffle_i32x4(v1, v3, 0xDD));
  }
}

}  // namespace

STATICLM_BF16_TARGET void pack_bf16_panel(const GemmArgs& a, std::int64_t j0, std::int64_t nc, std::int64_t p0,
                                          std::int64_t kp, std::int64_t kp_stride, std::uint32_t* panel) {
  const auto* w = static_cast<const std::uint16_t*>(a.w);
  const bool quantized = a.scales != nullptr;
  // Whole blocks of 16 pairs x 16 columns go through registers: 16 rows read (BF16) or
  // dequantized (quantized), then transposed; every pair of those lies inside the row.
  const std::int64_t vector_pairs = std::min(kp, a.k / 2 - p0) / 16 * 16;
  std::vector<std::uint32_t>& tail = quantized_row_pairs();  // quantized: the pairs past them
  for (std::int64_t c0 = 0; c0 < nc; c0 += 16) {
    std::uint32_t* dst = panel + (c0 / kNr) * kNr * kp_stride + c0 % kNr;
    const int cols = static_cast<int>(std::min<std::int64_t>(16, nc - c0));
    std::int64_t p = 0;
    for (; p < vector_pairs; p += 16) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        if (i >= cols) {
          r[i] = _mm512_setzero_si512();
        } else if (quantized) {
          r[i] = quantized_pairs16(a, j0 + c0 + i, 2 * (p0 + p));
        } else {
          r[i] = _mm512_loadu_si512(w + (j0 + c0 + i) * a.ldw + 2 * (p0 + p));
        }
      }
      transpose16(r, dst + p * kNr, kNr);
    }
    if (p < kp) {  // the last pairs (fewer than 16, or the row's end), one at a time
      const std::int64_t left = kp - p;
      if (quantized) {
        tail.assign(static_cast<std::size_t>(16 * left), 0u);
        for (int i = 0; i < cols; ++i) quantized_pairs(a, j0 + c0 + i, p0 + p, left, tail.data() + i * left);
      }
      for (std::int64_t q = 0; q < left; ++q) {
        for (int i = 0; i < 16; ++i) {
          std::uint32_t v = 0;
          if (i < cols) {
            v = quantized ? tail[static_cast<std::size_t>(i * left + q)]
                          : weight_pair(w + (j0 + c0 + i) * a.ldw, 2 * (p0 + p + q), a.k);
          }
          dst[(p + q) * kNr + i] = v;
        }
      }
    }
    for (std::int64_t q = kp; q < kp_stride; ++q) std::fill(dst + q * kNr, dst + q * kNr + 16, 0u);
  }
  // Columns past nc in the last block of 32.
  if (nc % kNr != 0 && nc % kNr <= 16) {
    std::uint32_t* dst = panel + (nc / kNr) * kNr * kp_stride + 16;
    for (std::int64_t q = 0; q < kp_stride; ++q) std::fill(dst + q * kNr, dst + q * kNr + 16, 0u);
  }
}

namespace {

template <int M>
STATICLM_BF16_TARGET inline void micro(const std::uint32_t* x, std::int64_t ldx, const std::uint32_t* panel,
                                       std::int64_t kp, float* c, std::int64_t ldc, std::int64_t nr, bool accumulate) {
  __m512 acc[M][2];
  for (int m = 0; m < M; ++m) acc[m][0] = acc[m][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < kp; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(panel + p * kNr);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(panel + p * kNr + 16);
    for (int m = 0; m < M; ++m) {
      const __m512bh xv = (__m512bh)_mm512_set1_epi32(static_cast<int>(x[m * ldx + p]));
      acc[m][0] = _mm512_dpbf16_ps(acc[m][0], xv, b0);
      acc[m][1] = _mm512_dpbf16_ps(acc[m][1], xv, b1);
    }
  }
  const __mmask16 lo = static_cast<__mmask16>(nr >= 16 ? 0xFFFF : (1u << nr) - 1);
  const __mmask16 hi = static_cast<__mmask16>(nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (1u << (nr - 16)) - 1);
  for (int m = 0; m < M; ++m) {
    float* row = c + m * ldc;
    __m512 o0 = acc[m][0], o1 = acc[m][1];
    if (accumulate) {
      o0 = _mm512_add_ps(_mm512_maskz_loadu_ps(lo, row), o0);
      o1 = _mm512_add_ps(_mm512_maskz_loadu_ps(hi, row + 16), o1);
    }
    _mm512_mask_storeu_ps(row, lo, o0);
    _mm512_mask_storeu_ps(row + 16, hi, o1);
  }
}

template <int M>
STATICLM_BF16_TARGET void micro_rows(int mr, const std::uint32_t* x, std::int64_t ldx, const std::uint32_t* panel,
                                     std::int64_t kp, float* c, std::int64_t ldc, std::int64_t nr, bool accumulate) {
  if constexpr (M > 1) {
    if (mr < M) return micro_rows<M - 1>(mr, x, ldx, panel, kp, c, ldc, nr, accumulate);
  }
  micro<M>(x, ldx, panel, kp, c, ldc, nr, accumulate);
}

}  // namespace

STATICLM_BF16_TARGET void gemm_bf16_dot(const std::uint32_t* xb, std::int64_t ldxb, const GemmArgs& a,
                                        std::int64_t j0, std::int64_t j1) {
  if (gemm_without_products(a, j0, j1)) return;
  const std::int64_t pairs = (a.k + 1) / 2;
  static thread_local AlignedScratch scratch;
  auto* panel = static_cast<std::uint32_t*>(scratch.get(sizeof(std::uint32_t) * kNc * kKp));
  for (std::int64_t jc = j0; jc < j1; jc += kNc) {
    const std::int64_t nc = std::min(kNc, j1 - jc);
    for (std::int64_t pc = 0; pc < pairs; pc += kKp) {
      const std::int64_t kp = std::min(kKp, pairs - pc);
      pack_bf16_panel(a, jc, nc, pc, kp, kp, panel);
      for (std::int64_t ir = 0; ir < a.n; ir += kMr) {
        const int mr = static_cast<int>(std::min<std::int64_t>(kMr, a.n - ir));
        for (std::int64_t jr = 0; jr < nc; jr += kNr) {
          micro_rows<kMr>(mr, xb + ir * ldxb + pc, ldxb, panel + (jr / kNr) * kNr * kp, kp,
                          a.y + ir * a.ldy + jc + jr, a.ldy, std::min(kNr, nc - jr), pc > 0);
        }
      }
    }
  }
}

STATICLM_BF16_TARGET void pack_bf16_pairs(const float* x, std::int64_t n, std::int64_t k, std::uint32_t* out) {
  const std::int64_t ld = (k + 1) / 2;
  for (std::int64_t r = 0; r < n; ++r) {
    const float* src = x + r * k;
    auto* dst = reinterpret_cast<std::uint16_t*>(out + r * ld);
    std::int64_t i = 0;
    for (; i + 16 <= k; i += 16) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), (__m256i)h);
    }
    if (i < k) {
      const __mmask16 m = static_cast<__mmask16>((1u << (k - i)) - 1);
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, src + i));
      _mm256_mask_storeu_epi16(dst + i, m, (__m256i)h);
    }
    if (k % 2) dst[k] = 0;
  }
}

}  // namespace staticlm::cpu
