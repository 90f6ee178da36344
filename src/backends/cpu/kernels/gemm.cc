// Highway GEMM / GEMV kernels, compiled once per x86 target (foreach_target) and dispatched at
// run time. See gemm.h.
#include "backends/cpu/kernels/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <type_traits>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "backends/cpu/kernels/row_streams.h"
#include "base/half.h"
#include "quant/formats.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/kernels/gemm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
#include "hwy/highway.h"

#ifndef STATICLM_GEMM_SCRATCH_ONCE
#define STATICLM_GEMM_SCRATCH_ONCE
namespace staticlm::cpu::detail {
// This thread's packed panel and de-interleaved activation row (one per thread, for every target).
inline AlignedScratch& panel_scratch() {
  static thread_local AlignedScratch s;
  return s;
}
inline AlignedScratch& row_scratch() {
  static thread_local AlignedScratch s;
  return s;
}
}  // namespace staticlm::cpu::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace staticlm::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Blocking: a packed panel is kNc columns x kKc depth (kNc * kKc * 4 = 128 KiB, in L2), one
// micro-panel kNr x kKc (16 KiB, in L1) with the x rows it meets.
constexpr std::int64_t kNr = kGemmColumnBlock;
constexpr std::int64_t kKc = 128;
constexpr std::int64_t kNc = 256;

// Rows of the micro-kernel: as many accumulators as the register file holds beside the panel
// loads and the broadcast (32 vector registers on AVX-512, 16 below).
constexpr int kVecs = static_cast<int>(kNr / hn::MaxLanes(DF()));
#if HWY_TARGET <= HWY_AVX3
constexpr int kMr = kVecs <= 2 ? 8 : 4;
#else
constexpr int kMr = kVecs >= 12 ? 1 : 12 / kVecs;
#endif

#if HWY_TARGET <= HWY_AVX3
// r[i][j] -> r[j][i] for 16 x 16 floats: pairs of rows interleaved, then pairs of pairs, then
// the 128-bit blocks of each group of four (after the first two steps r[4 m + q] holds, in block
// l, column 4 l + q of rows 4 m .. 4 m + 3).
HWY_INLINE void Transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    for (int h = 0; h < 2; ++h) {
      const __m512d x = _mm512_castps_pd(t[4 * i + h]), y = _mm512_castps_pd(t[4 * i + h + 2]);
      r[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
      r[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
    }
  }
  for (int q = 0; q < 4; ++q) {
    const __m512 u0 = _mm512_shuffle_f32x4(r[q], r[4 + q], 0x44), u1 = _mm512_shuffle_f32x4(r[q], r[4 + q], 0xEE);
    const __m512 u2 = _mm512_shuffle_f32x4(r[8 + q], r[12 + q], 0x44);
    const __m512 u3 = _mm512_shuffle_f32x4(r[8 + q], r[12 + q], 0xEE);
    t[q] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    t[4 + q] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
    t[8 + q] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    t[12 + q] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// Depths p0 .. p0 + kc of 16 columns of F32 or BF16 W from row j on, into dst[kk * kNr + c]:
// 16 x 16 blocks widened and transposed in registers, the last kc % 16 depths one by one. The
// scalar loop packed one element at a time and cost about 13% of a 512-row bf16 GEMM on AVX-512
// (BM_Gemm/512/1/1: 127 -> 150 GFLOP/s without any packing).
void PackColumns16(const GemmArgs& a, std::int64_t j, std::int64_t p0, std::int64_t kc, float* dst) {
  std::int64_t kk = 0;
  for (; kk + 16 <= kc; kk += 16) {
    __m512 r[16];
    for (int i = 0; i < 16; ++i) {
      const std::int64_t off = (j + i) * a.ldw + p0 + kk;
      if (a.wtype == DType::kF32) {
        r[i] = _mm512_loadu_ps(static_cast<const float*>(a.w) + off);
      } else {  // bf16: the high half of an f32
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const std::uint16_t*>(a.w) + off));
        r[i] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
      }
    }
    Transpose16(r);
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(dst + (kk + i) * kNr, r[i]);
  }
  for (std::int64_t i = 0; i < 16; ++i) {
    const std::int64_t off = (j + i) * a.ldw + p0;
    for (std::int64_t d = kk; d < kc; ++d) {
      dst[d * kNr + i] = a.wtype == DType::kF32 ? static_cast<const float*>(a.w)[off + d]
                                                : bf16_to_f32(static_cast<const std::uint16_t*>(a.w)[off + d]);
    }
  }
}
#endif

// Widens W[j0 + c][p0 + kk] into panel[c / kNr][kk][c % kNr] for c < nc (zero past nc).
void PackPanel(const GemmArgs& a, std::int64_t j0, std::int64_t nc, std::int64_t p0, std::int64_t kc, float* panel) {
  const std::int64_t panels = (nc + kNr - 1) / kNr;
  for (std::int64_t p = 0; p < panels; ++p) {
    float* dst = panel + p * kNr * kc;
    std::int64_t c = 0;
#if HWY_TARGET <= HWY_AVX3
    if (a.wtype == DType::kF32 || a.wtype == DType::kBF16) {
      for (; c + 16 <= kNr && p * kNr + c + 16 <= nc; c += 16) PackColumns16(a, j0 + p * kNr + c, p0, kc, dst + c);
    }
#endif
    for (; c < kNr; ++c) {
      const std::int64_t j = p * kNr + c;
      if (j >= nc) {
        for (std::int64_t kk = 0; kk < kc; ++kk) dst[kk * kNr + c] = 0.0f;
        continue;
      }
      const std::int64_t off = (j0 + j) * a.ldw + p0;
      switch (a.wtype) {
        case DType::kF32: {
          const float* src = static_cast<const float*>(a.w) + off;
          for (std::int64_t kk = 0; kk < kc; ++kk) dst[kk * kNr + c] = src[kk];
          break;
        }
        case DType::kBF16: {
          const std::uint16_t* src = static_cast<const std::uint16_t*>(a.w) + off;
          for (std::int64_t kk = 0; kk < kc; ++kk) dst[kk * kNr + c] = bf16_to_f32(src[kk]);
          break;
        }
        case DType::kF16: {
          const std::uint16_t* src = static_cast<const std::uint16_t*>(a.w) + off;
          for (std::int64_t kk = 0; kk < kc; ++kk) dst[kk * kNr + c] = f16_to_f32(src[kk]);
          break;
        }
        default: {  // quantized: dequantized as packed
          float* tmp = static_cast<float*>(detail::row_scratch().get(sizeof(float) * kKc));
          quant::dequantize_range(a.wtype, a.w, a.scales, a.zero_points, a.k, j0 + j, p0, p0 + kc, tmp);
          for (std::int64_t kk = 0; kk < kc; ++kk) dst[kk * kNr + c] = tmp[kk];
          break;
        }
      }
    }
  }
}

// C[M rows, nr cols] (+)= X[M rows, kc] . panel. Columns past nr are computed but not stored.
template <int M>
HWY_INLINE void Micro(const float* x, std::int64_t ldx, const float* panel, std::int64_t kc, float* c,
                      std::int64_t ldc, std::int64_t nr, bool accumulate) {
  const DF d;
  constexpr std::int64_t L = hn::MaxLanes(DF());
  using V = hn::Vec<DF>;
  V acc[M][kVecs];
  for (int m = 0; m < M; ++m)
    for (int v = 0; v < kVecs; ++v) acc[m][v] = hn::Zero(d);
  for (std::int64_t kk = 0; kk < kc; ++kk) {
    V b[kVecs];
    for (int v = 0; v < kVecs; ++v) b[v] = hn::Load(d, panel + kk * kNr + v * L);
    for (int m = 0; m < M; ++m) {
      const V xv = hn::Set(d, x[m * ldx + kk]);
      for (int v = 0; v < kVecs; ++v) acc[m][v] = hn::MulAdd(xv, b[v], acc[m][v]);
    }
  }
  for (int m = 0; m < M; ++m) {
    float* row = c + m * ldc;
    if (nr == kNr) {
      for (int v = 0; v < kVecs; ++v) {
        V out = acc[m][v];
        if (accumulate) out = hn::Add(hn::LoadU(d, row + v * L), out);
        hn::StoreU(out, d, row + v * L);
      }
    } else {
      HWY_ALIGN float tmp[kNr];
      for (int v = 0; v < kVecs; ++v) hn::Store(acc[m][v], d, tmp + v * L);
      for (std::int64_t j = 0; j < nr; ++j) row[j] = accumulate ? row[j] + tmp[j] : tmp[j];
    }
  }
}

template <int M>
void MicroRows(int mr, const float* x, std::int64_t ldx, const float* panel, std::int64_t kc, float* c,
               std::int64_t ldc, std::int64_t nr, bool accumulate) {
  if constexpr (M > 1) {
    if (mr < M) return MicroRows<M - 1>(mr, x, ldx, panel, kc, c, ldc, nr, accumulate);
  }
  Micro<M>(x, ldx, panel, kc, c, ldc, nr, accumulate);
}

void GemmF32(const GemmArgs& a, std::int64_t j0, std::int64_t j1) {
  if (gemm_without_products(a, j0, j1)) return;
  float* panel = static_cast<float*>(detail::panel_scratch().get(sizeof(float) * kNc * kKc));
  for (std::int64_t jc = j0; jc < j1; jc += kNc) {
    const std::int64_t nc = std::min(kNc, j1 - jc);
    for (std::int64_t pc = 0; pc < a.k; pc += kKc) {
      const std::int64_t kc = std::min(kKc, a.k - pc);
      PackPanel(a, jc, nc, pc, kc, panel);
      for (std::int64_t ir = 0; ir < a.n; ir += kMr) {
        const int mr = static_cast<int>(std::min<std::int64_t>(kMr, a.n - ir));
        for (std::int64_t jr = 0; jr < nc; jr += kNr) {
          MicroRows<kMr>(mr, a.x + ir * a.ldx + pc, a.ldx, panel + (jr / kNr) * kNr * kc, kc,
                         a.y + ir * a.ldy + jc + jr, a.ldy, std::min(kNr, nc - jr), pc > 0);
        }
      }
    }
  }
}

// Bytes ahead of the current position that the GEMV asks the cache to fetch: rows are streamed
// back to back, and a software prefetch keeps more lines in flight than the hardware prefetcher
// starts on its own at each 4 KiB page.
constexpr std::int64_t kPrefetchBytes = 4096;

// Prefetches the `lines` cache lines kPrefetchBytes past p (the bytes one loop round reads).
template <int lines, typename T>
HWY_INLINE void PrefetchLines(const T* p) {
  const char* c = reinterpret_cast<const char*>(p) + kPrefetchBytes;
#if HWY_ARCH_X86
  // Non-temporal: weights are read once per token, so they should not evict the activations.
  for (int i = 0; i < lines; ++i) _mm_prefetch(c + 64 * i, _MM_HINT_NTA);
#else
  for (int i = 0; i < lines; ++i) hwy::Prefetch(c + 64 * i);
#endif
}

// One weight row against one activation row, weights widened in registers; four accumulators.
// U4 / U8 rows: s * (sum u x - zero * xsum), with xsum the sum of x.
HWY_INLINE float DotRow(const float* x, const void* w, DType wtype, std::int64_t k, const float* xe,
                        const float* xo, const void* row_scales, int zero, float xsum) {
  const DF d;
  constexpr std::int64_t L = hn::MaxLanes(DF());
  using V = hn::Vec<DF>;
  V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  float tail = 0;
  if (wtype == DType::kBF16) {
    // A u32 lane holds two bf16: the low half is the even element, the high half the odd one.
    const hn::RebindToUnsigned<DF> du;
    const auto hi_mask = hn::Set(du, 0xFFFF0000u);
    const auto* src = static_cast<const std::uint16_t*>(w);
    const auto* src32 = reinterpret_cast<const std::uint32_t*>(src);  // LoadU: any alignment
    const std::int64_t pairs = k / 2;
    std::int64_t pi = 0;
    for (; pi + 2 * L <= pairs; pi += 2 * L) {
      PrefetchLines<2>(src32 + pi);
      const auto r0 = hn::LoadU(du, src32 + pi), r1 = hn::LoadU(du, src32 + pi + L);
      a0 = hn::MulAdd(hn::BitCast(d, hn::ShiftLeft<16>(r0)), hn::LoadU(d, xe + pi), a0);
      a1 = hn::MulAdd(hn::BitCast(d, hn::And(r0, hi_mask)), hn::LoadU(d, xo + pi), a1);
      a2 = hn::MulAdd(hn::BitCast(d, hn::ShiftLeft<16>(r1)), hn::LoadU(d, xe + pi + L), a2);
      a3 = hn::MulAdd(hn::BitCast(d, hn::And(r1, hi_mask)), hn::LoadU(d, xo + pi + L), a3);
    }
    for (; pi + L <= pairs; pi += L) {
      const auto r0 = hn::LoadU(du, src32 + pi);
      a0 = hn::MulAdd(hn::BitCast(d, hn::ShiftLeft<16>(r0)), hn::LoadU(d, xe + pi), a0);
      a1 = hn::MulAdd(hn::BitCast(d, hn::And(r0, hi_mask)), hn::LoadU(d, xo + pi), a1);
    }
    for (std::int64_t j = 2 * pi; j < k; ++j) tail += bf16_to_f32(src[j]) * x[j];
  } else if (wtype == DType::kI8) {
    // q8: integer values widened and converted in registers, the row's scale applied once.
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<std::int8_t, DF> d8;
    const auto* src = static_cast<const std::int8_t*>(w);
    std::int64_t i = 0;
    for (; i + 4 * L <= k; i += 4 * L) {
      PrefetchLines<(4 * L + 63) / 64>(src + i);
      a0 = hn::MulAdd(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, src + i))), hn::LoadU(d, x + i), a0);
      a1 = hn::MulAdd(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, src + i + L))), hn::LoadU(d, x + i + L), a1);
      a2 = hn::MulAdd(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, src + i + 2 * L))), hn::LoadU(d, x + i + 2 * L),
                      a2);
      a3 = hn::MulAdd(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, src + i + 3 * L))), hn::LoadU(d, x + i + 3 * L),
                      a3);
    }
    for (; i < k; ++i) tail += static_cast<float>(src[i]) * x[i];
    const float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)))) + tail;
    return sum * *static_cast<const float*>(row_scales);
  } else if (wtype == DType::kI4) {
    // q4: a byte holds elements 2i (low nibble) and 2i + 1 (high), like the bf16 pairs; each
    // group of kQ4Group elements is dotted, then scaled by its f16 scale.
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<std::uint8_t, DF> d8;
    const auto* src = static_cast<const std::uint8_t*>(w);
    const auto* scales = static_cast<const std::uint16_t*>(row_scales);
    const auto low = hn::Set(du, 0xFu);
    const auto eight = hn::Set(di, 8);
    constexpr std::int64_t kPairs = quant::kQ4Group / 2;
    for (std::int64_t g = 0; g < k / quant::kQ4Group; ++g) {
      PrefetchLines<1>(src + g * kPairs);
      V ge = hn::Zero(d), go = hn::Zero(d);
      for (std::int64_t c = 0; c < kPairs; c += L) {
        const std::int64_t pi = g * kPairs + c;
        const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, src + pi));
        const auto lo = hn::Sub(hn::BitCast(di, hn::Xor(hn::And(bytes, low), hn::BitCast(du, eight))), eight);
        const auto hi = hn::Sub(hn::BitCast(di, hn::Xor(hn::ShiftRight<4>(bytes), hn::BitCast(du, eight))), eight);
        ge = hn::MulAdd(hn::ConvertTo(d, lo), hn::LoadU(d, xe + pi), ge);
        go = hn::MulAdd(hn::ConvertTo(d, hi), hn::LoadU(d, xo + pi), go);
      }
      a0 = hn::MulAdd(hn::Add(ge, go), hn::Set(d, f16_to_f32(scales[g])), a0);
    }
  } else if (wtype == DType::kU8 || wtype == DType::kU4) {
    // npu-w4: unsigned values widened in registers (U4 nibbles against the de-interleaved x, as
    // q4), the zero point and the row's scale applied once.
    const hn::RebindToSigned<DF> di;
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<std::uint8_t, DF> d8;
    const auto* src = static_cast<const std::uint8_t*>(w);
    if (wtype == DType::kU8) {
      std::int64_t i = 0;
      for (; i + 2 * L <= k; i += 2 * L) {
        PrefetchLines<(2 * L + 63) / 64>(src + i);
        a0 = hn::MulAdd(hn::ConvertTo(d, hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, src + i)))), hn::LoadU(d, x + i), a0);
        a1 = hn::MulAdd(hn::ConvertTo(d, hn::BitCast(di, hn::PromoteTo(du, hn::LoadU(d8, src + i + L)))),
                        hn::LoadU(d, x + i + L), a1);
      }
      for (; i < k; ++i) tail += static_cast<float>(src[i]) * x[i];
    } else {
      const auto low = hn::Set(du, 0xFu);
      const std::int64_t pairs = k / 2;
      std::int64_t pi = 0;
      for (; pi + L <= pairs; pi += L) {
        PrefetchLines<(L + 63) / 64>(src + pi);
        const auto bytes = hn::PromoteTo(du, hn::LoadU(d8, src + pi));
        a0 = hn::MulAdd(hn::ConvertTo(d, hn::BitCast(di, hn::And(bytes, low))), hn::LoadU(d, xe + pi), a0);
        a1 = hn::MulAdd(hn::ConvertTo(d, hn::BitCast(di, hn::ShiftRight<4>(bytes))), hn::LoadU(d, xo + pi), a1);
      }
      for (std::int64_t j = 2 * pi; j < k; ++j) tail += static_cast<float>(quant::u4_value(src, j)) * x[j];
    }
    const float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1))) + tail;
    return (sum - static_cast<float>(zero) * xsum) * *static_cast<const float*>(row_scales);
  } else if (wtype == DType::kF16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    const auto* src = static_cast<const hwy::float16_t*>(w);
    std::int64_t i = 0;
    for (; i + 2 * L <= k; i += 2 * L) {
      PrefetchLines<1>(src + i);
      a0 = hn::MulAdd(hn::PromoteTo(d, hn::LoadU(dh, src + i)), hn::LoadU(d, x + i), a0);
      a1 = hn::MulAdd(hn::PromoteTo(d, hn::LoadU(dh, src + i + L)), hn::LoadU(d, x + i + L), a1);
    }
    const auto* raw = static_cast<const std::uint16_t*>(w);
    for (; i < k; ++i) tail += f16_to_f32(raw[i]) * x[i];
  } else {
    const float* src = static_cast<const float*>(w);
    std::int64_t i = 0;
    for (; i + 4 * L <= k; i += 4 * L) {
      PrefetchLines<4>(src + i);
      a0 = hn::MulAdd(hn::LoadU(d, src + i), hn::LoadU(d, x + i), a0);
      a1 = hn::MulAdd(hn::LoadU(d, src + i + L), hn::LoadU(d, x + i + L), a1);
      a2 = hn::MulAdd(hn::LoadU(d, src + i + 2 * L), hn::LoadU(d, x + i + 2 * L), a2);
      a3 = hn::MulAdd(hn::LoadU(d, src + i + 3 * L), hn::LoadU(d, x + i + 3 * L), a3);
    }
    for (; i < k; ++i) tail += src[i] * x[i];
  }
  return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3)))) + tail;
}

// Each row stream of DotRowsBf16 / DotRowsWide is prefetched this many bytes ahead into all
// cache levels, as the VNNI GEMV does (gemv_vnni.cc): on an Intel Xeon (Emerald Rapids) the
// hardware prefetchers alone left bf16 E2B decode at 81-84% of the read ceiling, 1 KiB ahead
// 97-100%, 2 KiB 96-100% (`staticlm bench -m /tmp/e2b -p 8 -n 16 --max-seq 256`, three
// alternated rounds, median step 176-177 -> 147-151 ms).
constexpr std::int64_t kStreamPrefetchBytes = 1024;

// kRows bf16 rows at once, `stride` bytes apart, against one activation row (x, and its even
// and odd elements xe / xo): out[r * out_stride] = x . row r, the activation loads shared by
// the rows (row_streams.h).
template <int kRows>
HWY_INLINE void DotRowsBf16(const float* x, const float* xe, const float* xo, const unsigned char* w,
                            std::int64_t stride, std::int64_t k, float* out, std::int64_t out_stride) {
  const DF d;
  const hn::RebindToUnsigned<DF> du;
  constexpr std::int64_t L = hn::MaxLanes(DF());
  using V = hn::Vec<DF>;
  const auto hi_mask = hn::Set(du, 0xFFFF0000u);
  V even[kRows], odd[kRows];
  for (int r = 0; r < kRows; ++r) even[r] = odd[r] = hn::Zero(d);
  const std::int64_t pairs = k / 2;
  std::int64_t pi = 0;
  for (; pi + L <= pairs; pi += L) {
    const V ve = hn::LoadU(d, xe + pi), vo = hn::LoadU(d, xo + pi);
    for (int r = 0; r < kRows; ++r) {
      const auto* row = reinterpret_cast<const std::uint32_t*>(w + r * stride) + pi;
      hwy::Prefetch(reinterpret_cast<const char*>(row) + kStreamPrefetchBytes);
      const auto bits = hn::LoadU(du, row);
      even[r] = hn::MulAdd(hn::BitCast(d, hn::ShiftLeft<16>(bits)), ve, even[r]);
      odd[r] = hn::MulAdd(hn::BitCast(d, hn::And(bits, hi_mask)), vo, odd[r]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    const auto* src = reinterpret_cast<const std::uint16_t*>(w + r * stride);
    float tail = 0;
    for (std::int64_t j = 2 * pi; j < k; ++j) tail += bf16_to_f32(src[j]) * x[j];
    out[r * out_stride] = hn::GetLane(hn::SumOfLanes(d, hn::Add(even[r], odd[r]))) + tail;
  }
}

// As DotRowsBf16, for f32 (T = float) and f16 (T = hwy::float16_t) rows.
template <int kRows, typename T>
HWY_INLINE void DotRowsWide(const float* x, const unsigned char* w, std::int64_t stride, std::int64_t k, float* out,
                            std::int64_t out_stride) {
  const DF d;
  const hn::Rebind<T, DF> dt;
  constexpr std::int64_t L = hn::MaxLanes(DF());
  using V = hn::Vec<DF>;
  V acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + L <= k; i += L) {
    const V vx = hn::LoadU(d, x + i);
    for (int r = 0; r < kRows; ++r) {
      const T* src = reinterpret_cast<const T*>(w + r * stride);
      hwy::Prefetch(reinterpret_cast<const char*>(src + i) + kStreamPrefetchBytes);
      if constexpr (std::is_same_v<T, float>) {
        acc[r] = hn::MulAdd(hn::LoadU(d, src + i), vx, acc[r]);
      } else {
        acc[r] = hn::MulAdd(hn::PromoteTo(d, hn::LoadU(dt, src + i)), vx, acc[r]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float tail = 0;
    for (std::int64_t j = i; j < k; ++j) {
      if constexpr (std::is_same_v<T, float>) {
        tail += reinterpret_cast<const float*>(w + r * stride)[j] * x[j];
      } else {
        tail += f16_to_f32(reinterpret_cast<const std::uint16_t*>(w + r * stride)[j]) * x[j];
      }
    }
    out[r * out_stride] = hn::GetLane(hn::SumOfLanes(d, acc[r])) + tail;
  }
}

void GemvF32(const GemmArgs& a, std::int64_t j0, std::int64_t j1) {
  const auto* wbase = static_cast<const unsigned char*>(a.w);
  const std::size_t row_bytes = dtype_bytes(a.wtype, static_cast<std::size_t>(a.k));  // ldw = k when quantized
  const bool quantized = a.scales != nullptr;
  const std::size_t row_stride = quantized ? row_bytes : dtype_bytes(a.wtype, static_cast<std::size_t>(a.ldw));
  // Scales of row j: I8, U4, U8 one f32, I4 k / kQ4Group f16.
  const std::size_t scale_stride = a.wtype == DType::kI4 ? 2 * (a.k / quant::kQ4Group) : quantized ? 4 : 0;
  const auto* sbase = static_cast<const unsigned char*>(a.scales);
  float* deint = nullptr;
  if (a.wtype == DType::kBF16 || a.wtype == DType::kI4 || a.wtype == DType::kU4) {
    deint = static_cast<float*>(detail::row_scratch().get(sizeof(float) * (a.k + 2)));
  }
  for (std::int64_t r = 0; r < a.n; ++r) {
    const float* x = a.x + r * a.ldx;
    float xsum = 0;  // for the zero points of U4 / U8 rows
    if (a.zero_points) {
      for (std::int64_t i = 0; i < a.k; ++i) xsum += x[i];
    }
    const float *xe = nullptr, *xo = nullptr;
    if (deint) {
      // Even and odd elements apart, matching the two halves of each u32 weight lane.
      const std::int64_t pairs = a.k / 2;
      for (std::int64_t p = 0; p < pairs; ++p) {
        deint[p] = x[2 * p];
        deint[pairs + p] = x[2 * p + 1];
      }
      xe = deint;
      xo = deint + pairs;
    }
    float* y = a.y + r * a.ldy;
    // bf16 / f16 / f32 rows: kStreamRows at a time (row_streams.h).
    const auto stride = static_cast<std::int64_t>(row_stride);
    if (a.wtype == DType::kBF16 || a.wtype == DType::kF32 || a.wtype == DType::kF16) {
      in_streams(j0, j1, [&](std::int64_t j, std::int64_t part, auto n) {
        constexpr int kRows = decltype(n)::value;
        const unsigned char* w = wbase + j * stride;
        if (a.wtype == DType::kBF16) {
          DotRowsBf16<kRows>(x, xe, xo, w, part * stride, a.k, y + j, part);
        } else if (a.wtype == DType::kF32) {
          DotRowsWide<kRows, float>(x, w, part * stride, a.k, y + j, part);
        } else {
          DotRowsWide<kRows, hwy::float16_t>(x, w, part * stride, a.k, y + j, part);
        }
      });
      continue;
    }
    for (std::int64_t j = j0; j < j1; ++j) {
      y[j] = DotRow(x, wbase + j * row_stride, a.wtype, a.k, xe, xo, sbase ? sbase + j * scale_stride : nullptr,
                    a.zero_points ? a.zero_points[j] : 0, xsum);
    }
  }
}

void RoundToBf16(const float* x, std::int64_t count, float* out) {
  const DF d;
  const hn::RebindToUnsigned<DF> du;
  constexpr std::int64_t L = hn::MaxLanes(DF());
  std::int64_t i = 0;
  const auto one = hn::Set(du, 1u), bias = hn::Set(du, 0x7FFFu), keep = hn::Set(du, 0xFFFF0000u);
  for (; i + L <= count; i += L) {
    const auto bits = hn::BitCast(du, hn::LoadU(d, x + i));
    const auto rounded = hn::Add(bits, hn::Add(bias, hn::And(hn::ShiftRight<16>(bits), one)));
    hn::StoreU(hn::BitCast(d, hn::And(rounded, keep)), d, out + i);
  }
  for (; i < count; ++i) out[i] = bf16_to_f32(f32_to_bf16(x[i]));
}

}  // namespace staticlm::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm::cpu {

HWY_EXPORT(GemmF32);
HWY_EXPORT(GemvF32);
HWY_EXPORT(RoundToBf16);

void gemm_f32(const GemmArgs& a, std::int64_t j0, std::int64_t j1) { HWY_DYNAMIC_DISPATCH(GemmF32)(a, j0, j1); }
void gemv_f32(const GemmArgs& a, std::int64_t j0, std::int64_t j1) { HWY_DYNAMIC_DISPATCH(GemvF32)(a, j0, j1); }
void round_to_bf16(const float* x, std::int64_t count, float* out) {
  HWY_DYNAMIC_DISPATCH(RoundToBf16)(x, count, out);
}

}  // namespace staticlm::cpu
#endif
