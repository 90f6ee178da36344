// AVX-512 VNNI decode GEMV for quantized weights; see gemv_vnni.h. Intrinsics in functions
// compiled for that target only (Highway 1.0.3 has no u8 x s8 dot product); dispatch.cc enables
// them only on CPUs that have the instructions.
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics headers as
// "(may be) used uninitialized" once they are inlined here; they are not read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "backends/cpu/kernels/gemv_vnni.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/row_streams.h"
#include "base/half.h"
#include "quant/formats.h"

#define STATICLM_VNNI_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))

namespace staticlm::cpu {

namespace {

constexpr std::int64_t kBlock = 64;  // activations per zmm of int8
constexpr int kLanes = 16;           // 32-bit lanes per zmm

bool nibbles(DType t) { return t == DType::kI4 || t == DType::kU4; }

// Where column e of a row is stored in the unpacked order. Bytes: in place. Nibbles: a 64-byte
// load (128 columns) unpacks to a zmm of its low nibbles (even columns) and one of its high
// nibbles (odd columns); a last 64 columns (32 bytes) unpack to one zmm, low nibbles then high.
std::int64_t stored_at(std::int64_t e, std::int64_t k, bool nibble_order) {
  if (!nibble_order) return e;
  const std::int64_t unit = e / 128 * 128, i = e - unit;
  if (unit + 128 <= k) return unit + (i % 2) * 64 + i / 2;
  return unit + (i % 2) * 32 + i / 2;
}

// Software prefetch of each weight stream, this many bytes ahead, into all cache levels: with
// four streams per thread the hardware prefetchers alone left decode at 45-60% of the measured
// read bandwidth. Measured (BM_Gemv/[34]/2/6144/0, q8 / q4 GB/s, same run): none 41 / 33,
// NTA 1 KiB 50 / 43, NTA 4 KiB 48 / 40, T0 512 B 38 / 42, T0 1 KiB 58 / 51, T0 1.5 KiB 58 / 51,
// T0 2 KiB 55 / 45, T1 1 KiB 48 / 48 (read bandwidth about 70 GB/s).
constexpr std::int64_t kPrefetchBytes = 1024;

// And, on Intel CPUs, each stream further ahead into L2 only: on the Intel machine (Xeon model
// 207, read ceiling 32-34 GB/s) the nibble formats streamed at 85-90% of it with the T0
// prefetch alone. Measured (BM_Gemv/[345]/2/{6144/0/1536, 1536/0/6144}, GiB/s, mean over the
// six of three alternated rounds): T0 1 KiB alone 28.5; with T1 2 KiB 29.3, 3 KiB 29.4, 4 KiB
// 29.5, 8 KiB 29.1; T2 4 KiB 29.3; T0 2 KiB + T1 6 KiB 29.6 (another set: T0 1 KiB alone 28.0,
// + T1 4 KiB 28.9, no prefetch at all 23.1). E2B
// decode, `staticlm bench -p 32 -n 64`, four alternated pairs: q4 88.9 -> 91.2%, npu-w4 90.2 ->
// 94.5%, q8 93.7 -> 96.0% of the ceiling. On the AMD EPYC machine of 2026-12-02 the same
// second prefetch (T1 3 or 4 KiB) made every format slower (docs/quantization.md), so it is
// chosen by vendor at run time (l2_prefetch()).
constexpr std::int64_t kPrefetchL2Bytes = 4096;

bool l2_prefetch() {
  static const bool intel = [] {
    __builtin_cpu_init();
    return __builtin_cpu_is("intel") != 0;
  }();
  return intel;
}

template <bool kL2>
STATICLM_VNNI_TARGET inline void prefetch(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
  if constexpr (kL2) _mm_prefetch(static_cast<const char*>(p) + kPrefetchL2Bytes, _MM_HINT_T1);
}

// I4's group scales are four more streams (one per weight stream, 2 bytes per 32 columns) that
// the loop reads once per 512 columns; prefetched this many rows ahead (the rows a stream
// reads next), so their misses do not stall the multiply-adds. Measured (BM_Gemv/4/2/6144/0,
// GB/s, mean of 8 interleaved runs): none 34.6, 4 rows 39.9, 8 rows 37.0.
constexpr std::int64_t kScaleRowsAhead = 4;

// And within a row, at each 512-column chunk, the scales this many groups further on (4 lines;
// on short rows, those of the stream's next rows): a row of the down projection (6144 or 12288
// columns) has 6 or 12 lines of scales, read a half line per chunk, too slowly for the hardware
// prefetchers. Measured (BM_Gemv/4/2/{6144/0/1536, 1536/0/6144, 1536/0/12288}, GB/s, a throwaway
// build choosing the distance, alternated): none 37.6-40.4 / 36.1-39.9 / 36.1-41.6, 64 groups
// 38.4-46.4 / 43.2-43.9 / 41.4-42.9, 128 groups 43.9-50.4 / 38.8-46.8 / 41.5-47.6; 256 and 512
// no better.
constexpr std::int64_t kScaleGroupsAhead = 128;

// Prefetches n uint16 at base + offset; the address may lie past the array (the last rows),
// which a prefetch may name: it never faults.
STATICLM_VNNI_TARGET inline void prefetch_u16(const std::uint16_t* base, std::int64_t offset, std::int64_t n) {
  const auto at = reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(2 * offset);
  _mm_prefetch(reinterpret_cast<const char*>(at), _MM_HINT_T0);
  if (n > 1) _mm_prefetch(reinterpret_cast<const char*>(at + static_cast<std::uintptr_t>(2 * n - 1)), _MM_HINT_T0);  // a second line
}

STATICLM_VNNI_TARGET inline __m512i load(const void* p) { return _mm512_loadu_si512(p); }

// 32 bytes of nibbles (64 columns) -> one zmm: the low nibbles, then the high ones (unmasked).
STATICLM_VNNI_TARGET inline __m512i half_nibbles(const std::uint8_t* p) {
  const __m512i b = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_mask_srli_epi16(b, static_cast<__mmask32>(0xFFFF0000u), b, 4);
}

// acc + the u8 x s8 dot products of w and x, as _mm512_dpbusd_epi32. In asm because GCC 12
// copied every accumulator to another register and back around each intrinsic: 17 of the 56
// instructions of the U4 loop, 16 of q8's 40 (docs/quantization.md, "GCC's code for the loops").
STATICLM_VNNI_TARGET inline __m512i dpbusd(__m512i acc, __m512i w, __m512i x) {
  asm("vpdpbusd {%[x], %[w], %[acc]|%[acc], %[w], %[x]}" : [acc] "+v"(acc) : [w] "v"(w), [x] "v"(x));
  return acc;
}

// (v & 0x0F) ^ c per byte, in one instruction.
STATICLM_VNNI_TARGET inline __m512i low4_xor(__m512i v, __m512i c) {
  return _mm512_ternarylogic_epi32(v, _mm512_set1_epi8(0x0F), c, 0x6A);
}

// 64 weight bytes as vpdpbusd's unsigned operand (I8: flipped, + 128).
template <bool kFlip>
STATICLM_VNNI_TARGET inline __m512i byte_block(const std::uint8_t* p, __m512i flip) {
  const __m512i v = load(p);
  if constexpr (kFlip) return _mm512_xor_si512(v, flip);
  return v;
}

// 64 bytes of packed nibbles as two zmm of bytes, the low and the high nibble of each, XORed
// with c. The shift first and the bytes held in a register: GCC otherwise copied them before the
// destructive ternlog and loaded them a second time for the shift.
STATICLM_VNNI_TARGET inline void split_nibbles(const std::uint8_t* p, __m512i c, __m512i& lo, __m512i& hi) {
  __m512i v = load(p);
  asm("" : "+v"(v));
  hi = low4_xor(_mm512_srli_epi16(v, 4), c);
  lo = low4_xor(v, c);
}

// kRows byte rows (I8 flipped to unsigned, U8 as is) `stride` bytes apart (row_streams.h): the
// activation loads are shared by the rows. Per chunk each lane sums its group in int32, then one
// convert and one multiply-add by the lane scales. kFine (I8): a second dot product with the
// activations' int8 residual (xq_fine, in steps of 1/kFineSteps of the first's), so q8 decode
// keeps about 15 bits of each activation.
template <int kRows, bool kFlip, bool kFine, bool kL2>
STATICLM_VNNI_TARGET void dot_bytes_rows(const VnniRow& x, const std::uint8_t* w, std::int64_t stride, float* out,
                                         std::int64_t out_stride) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)), zero = _mm512_setzero_si512();
  const __m512 fine_step = _mm512_set1_ps(1.0f / kFineSteps);
  const std::int8_t* xq = x.xq.data();
  const std::int8_t* xf = kFine ? x.xq_fine.data() : nullptr;
  __m512 f[kRows];
  __m512i a[kRows], r[kRows];
  for (int i = 0; i < kRows; ++i) f[i] = _mm512_setzero_ps();
  for (std::int64_t c0 = 0, lane = 0; c0 < x.k; c0 += kVnniChunk, lane += kLanes) {
    const __m512i init = kFlip ? load(x.lane_init.data() + lane) : zero;
    const __m512i init_fine = kFine ? load(x.lane_init_fine.data() + lane) : zero;
    for (int i = 0; i < kRows; ++i) a[i] = init, r[i] = init_fine;
    const std::int64_t end = std::min(c0 + kVnniChunk, x.k);
    for (std::int64_t o = c0; o < end; o += kBlock) {
      const __m512i xv = load(xq + o);
      const __m512i xv_fine = kFine ? load(xf + o) : zero;
      for (int i = 0; i < kRows; ++i) {
        prefetch<kL2>(w + i * stride + o);
        const __m512i wv = byte_block<kFlip>(w + i * stride + o, flip);
        a[i] = dpbusd(a[i], wv, xv);
        if constexpr (kFine) r[i] = dpbusd(r[i], wv, xv_fine);
      }
    }
    const __m512 scales = _mm512_loadu_ps(x.scale.data() + lane);
    for (int i = 0; i < kRows; ++i) {
      __m512 v = _mm512_cvtepi32_ps(a[i]);
      if constexpr (kFine) v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(r[i]), fine_step, v);
      f[i] = _mm512_fmadd_ps(v, scales, f[i]);
    }
  }
  for (int i = 0; i < kRows; ++i) out[i * out_stride] = _mm512_reduce_add_ps(f[i]);
}

// kRows U4 rows `stride` bytes apart, as dot_bytes_rows: each 64-byte load gives two zmm of
// nibbles (even and odd columns); a last 64 columns (32 bytes) use the half layout.
template <int kRows, bool kL2>
STATICLM_VNNI_TARGET void dot_u4_rows(const VnniRow& x, const std::uint8_t* w, std::int64_t stride, float* out,
                                      std::int64_t out_stride) {
  const __m512i zero = _mm512_setzero_si512();
  const std::int8_t* xq = x.xq.data();
  __m512 f[kRows];
  __m512i a[kRows], b[kRows];
  for (int i = 0; i < kRows; ++i) f[i] = _mm512_setzero_ps();
  for (std::int64_t c0 = 0, lane = 0; c0 < x.k; c0 += kVnniChunk, lane += kLanes) {
    for (int i = 0; i < kRows; ++i) a[i] = b[i] = zero;
    const std::int64_t end = std::min(c0 + kVnniChunk, x.k);
    std::int64_t e = c0;
    for (; e + 128 <= end; e += 128) {
      const __m512i xlo = load(xq + e), xhi = load(xq + e + kBlock);
      for (int i = 0; i < kRows; ++i) {
        prefetch<kL2>(w + i * stride + e / 2);
        __m512i lo, hi;
        split_nibbles(w + i * stride + e / 2, zero, lo, hi);
        a[i] = dpbusd(a[i], lo, xlo);
        b[i] = dpbusd(b[i], hi, xhi);
      }
    }
    if (e < end) {  // a last 64 columns
      const __m512i xv = load(xq + e);
      for (int i = 0; i < kRows; ++i) a[i] = dpbusd(a[i], low4_xor(half_nibbles(w + i * stride + e / 2), zero), xv);
    }
    const __m512 scales = _mm512_loadu_ps(x.scale.data() + lane);
    for (int i = 0; i < kRows; ++i) f[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(a[i], b[i])), scales, f[i]);
  }
  for (int i = 0; i < kRows; ++i) out[i * out_stride] = _mm512_reduce_add_ps(f[i]);
}

// kRows I4 rows at once, `stride` rows apart (row_streams.h): the activation loads and scales
// are shared by the rows (the arithmetic alone runs 40% faster than one row at a time,
// BM_Gemv/4/1/256/512). Per chunk (16 groups), the weight scales times the activation scales in
// one vector `sv`; a 64-byte load holds 4 groups (16 bytes each), so lanes 4q..4q+3 of both
// nibble zmm are group q of the load: two dot products, then one convert and multiply-add by the
// scales spread with `pick[q]`. The +8 that makes the nibbles unsigned is removed per group with
// group_bias. A last 64 columns (two groups) use the half layout and `pick_half`.
template <int kRows, bool kL2>
STATICLM_VNNI_TARGET void dot_i4_rows(const VnniRow& x, const std::uint8_t* w, const std::uint16_t* scales,
                                      std::int64_t stride, const __m512i* pick, const __m512i& pick_half, float* out) {
  // stride: rows between the kRows rows (weights k / 2 bytes a row, scales k / 32, out 1).
  const std::int8_t* xq = x.xq.data();
  const std::int64_t row_bytes = x.k / 2, groups = x.k / kVnniGroup;
  const __m512i eight = _mm512_set1_epi8(0x08), zero = _mm512_setzero_si512();
  __m512 acc[kRows], fb[kRows], sv[kRows];
  for (int r = 0; r < kRows; ++r) {
    acc[r] = fb[r] = _mm512_setzero_ps();
    prefetch_u16(scales, (r * stride + kScaleRowsAhead) * groups, groups);
  }
  for (std::int64_t c0 = 0; c0 < x.k; c0 += kVnniChunk) {
    const std::int64_t g0 = c0 / kVnniGroup, cols = std::min(kVnniChunk, x.k - c0);
    const auto m = static_cast<__mmask16>(cols == kVnniChunk ? 0xFFFF : (1u << (cols / kVnniGroup)) - 1);
    const __m512 xs = _mm512_maskz_loadu_ps(m, x.scale.data() + g0);
    const __m512 xb = _mm512_maskz_loadu_ps(m, x.group_bias.data() + g0);
    for (int r = 0; r < kRows; ++r) prefetch_u16(scales, r * stride * groups + g0 + kScaleGroupsAhead, 1);
    for (int r = 0; r < kRows; ++r) {
      const __m512 sw = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, scales + r * stride * groups + g0));
      sv[r] = _mm512_mul_ps(sw, xs);
      fb[r] = _mm512_fmadd_ps(sw, xb, fb[r]);
    }
    const int full = static_cast<int>(cols / 128);
    for (int q = 0; q < full; ++q) {
      const __m512i xlo = load(xq + c0 + 128 * q), xhi = load(xq + c0 + 128 * q + kBlock);
      for (int r = 0; r < kRows; ++r) {
        const std::uint8_t* p = w + r * stride * row_bytes + c0 / 2 + 64 * q;
        prefetch<kL2>(p);
        __m512i lo, hi;
        split_nibbles(p, eight, lo, hi);
        const __m512i d = dpbusd(dpbusd(zero, lo, xlo), hi, xhi);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(pick[q], sv[r]), acc[r]);
      }
    }
    if (cols % 128 != 0) {  // a last 64 columns: groups 4 full and 4 full + 1, the half layout
      const __m512i xv = load(xq + c0 + 128 * full);
      const __m512i at = _mm512_add_epi32(pick_half, _mm512_set1_epi32(4 * full));
      for (int r = 0; r < kRows; ++r) {
        const __m512i v = half_nibbles(w + r * stride * row_bytes + c0 / 2 + 64 * full);
        const __m512i d = dpbusd(zero, low4_xor(v, eight), xv);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(at, sv[r]), acc[r]);
      }
    }
  }
  for (int r = 0; r < kRows; ++r) out[r * stride] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r], fb[r]));
}

template <bool kL2>
STATICLM_VNNI_TARGET void gemv_vnni_impl(const VnniRow& x, const GemmArgs& a, float* y, std::int64_t j0,
                                         std::int64_t j1) {
  const auto* w = static_cast<const std::uint8_t*>(a.w);
  const std::int64_t k = a.k;
  switch (a.wtype) {
    case DType::kI8: {
      const auto* s = static_cast<const float*>(a.scales);
      in_streams(j0, j1, [&](std::int64_t j, std::int64_t part, auto n) {
        dot_bytes_rows<decltype(n)::value, true, true, kL2>(x, w + j * k, part * k, y + j, part);
      });
      for (std::int64_t j = j0; j < j1; ++j) y[j] *= s[j];
      return;
    }
    case DType::kU8:
    case DType::kU4: {
      const auto* s = static_cast<const float*>(a.scales);
      const std::int64_t row = a.wtype == DType::kU8 ? k : k / 2;
      in_streams(j0, j1, [&](std::int64_t j, std::int64_t part, auto n) {
        if (a.wtype == DType::kU8) {
          dot_bytes_rows<decltype(n)::value, false, false, kL2>(x, w + j * row, part * row, y + j, part);
        } else {
          dot_u4_rows<decltype(n)::value, kL2>(x, w + j * row, part * row, y + j, part);
        }
      });
      for (std::int64_t j = j0; j < j1; ++j) y[j] = (y[j] - static_cast<float>(a.zero_points[j]) * x.total) * s[j];
      return;
    }
    default: {  // I4
      // pick[q]: lane l of the q-th 128 columns of a chunk is group 4q + l / 4 (of its 16).
      // pick_half: lanes 0-7 are the low nibbles, 8-15 the high ones, of groups 0, 1, 0, 1.
      __m512i pick[4];
      alignas(64) std::int32_t idx[16];
      for (int q = 0; q < 4; ++q) {
        for (int l = 0; l < 16; ++l) idx[l] = 4 * q + l / 4;
        pick[q] = _mm512_load_si512(idx);
      }
      for (int l = 0; l < 16; ++l) idx[l] = (l >> 2) & 1;
      const __m512i pick_half = _mm512_load_si512(idx);
      const auto* s = static_cast<const std::uint16_t*>(a.scales);
      const std::int64_t groups = k / quant::kQ4Group;
      in_streams(j0, j1, [&](std::int64_t j, std::int64_t part, auto n) {
        dot_i4_rows<decltype(n)::value, kL2>(x, w + j * (k / 2), s + j * groups, part, pick, pick_half, y + j);
      });
      return;
    }
  }
}

// 16 f32 -> round to nearest even (the default MXCSR mode), clamped to +-127 for rounding.
STATICLM_VNNI_TARGET inline __m512i round_s8(__m512 v) {
  const __m512i lim = _mm512_set1_epi32(127);
  return _mm512_max_epi32(_mm512_min_epi32(_mm512_cvtps_epi32(v), lim), _mm512_sub_epi32(_mm512_setzero_si512(), lim));
}

STATICLM_VNNI_TARGET inline void store_s8(std::int8_t* p, __m512i q) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(q));
}

// The max (sum) of each aligned 4 lanes of v, in all 4 (two in-lane shuffles).
STATICLM_VNNI_TARGET inline __m512 max_within4(__m512 v) {
  v = _mm512_max_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_max_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
}

STATICLM_VNNI_TARGET inline __m512i sum_within4(__m512i v) {
  v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
  return _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
}

// Lane indices 0, 2, ..., 30: with permutex2var, the even elements of two vectors.
STATICLM_VNNI_TARGET inline __m512i even_lanes() {
  alignas(64) std::int32_t idx[16];
  for (int l = 0; l < 16; ++l) idx[l] = 2 * l;
  return _mm512_load_si512(idx);
}

// x [k] -> the order the nibbles unpack to (stored_at): per 128 columns the even ones, then the
// odd ones; a last 64 columns likewise in halves of 32.
STATICLM_VNNI_TARGET void to_nibble_order(const float* x, std::int64_t k, float* out) {
  const __m512i even = even_lanes(), odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (std::int64_t e = 0; e < k; e += 128) {
    const std::int64_t half = e + 128 <= k ? 64 : 32;  // where the odd columns start
    for (std::int64_t h = 0; h < half / 16; ++h) {
      const __m512 a = _mm512_loadu_ps(x + e + 32 * h), b = _mm512_loadu_ps(x + e + 32 * h + 16);
      _mm512_storeu_ps(out + e + 16 * h, _mm512_permutex2var_ps(a, even, b));
      _mm512_storeu_ps(out + e + half + 16 * h, _mm512_permutex2var_ps(a, odd, b));
    }
  }
}

// Permute indices of reduce16's rounds: round r leaves p = 8 >> r partial results per group.
// Output lane o: group o / p (the first 8 / p from a, the rest from b), partial o % p; its front
// half at 2 p (group % (8 / p)) + o % p, its back half p further. Bit 4 of an index selects b.
struct Reduce16Indices {
  alignas(64) std::int32_t front[4][16], back[4][16];
  constexpr Reduce16Indices() : front{}, back{} {
    for (int r = 0; r < 4; ++r) {
      const int p = 8 >> r, per_vector = 8 / p;
      for (int o = 0; o < 16; ++o) {
        const int group = o / p, from_b = group >= per_vector ? 16 : 0;
        front[r][o] = from_b + 2 * p * (group % per_vector) + o % p;
        back[r][o] = front[r][o] + p;
      }
    }
  }
};
constexpr Reduce16Indices kReduce16;

// kMax: the f32 max of two vectors' lanes (as bits); else their int32 sum.
template <bool kMax>
STATICLM_VNNI_TARGET inline __m512i combine(__m512i a, __m512i b) {
  if constexpr (kMax) return _mm512_castps_si512(_mm512_max_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)));
  return _mm512_add_epi32(a, b);
}

// Lane g of the result = the max or the sum of the 16 lanes of v[g] (v is overwritten): four
// rounds, each pairing the vectors and taking, with two permutes, the front and the back half of
// every group's partial results, which one max or add combines. Instead of a horizontal
// reduction per vector (a chain of dependent shuffles and ops each): 45 independent instructions.
template <bool kMax>
STATICLM_VNNI_TARGET inline __m512i reduce16(__m512i* v) {
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    const __m512i f = _mm512_load_si512(kReduce16.front[r]), b = _mm512_load_si512(kReduce16.back[r]);
    const int pairs = 8 >> r;
#pragma GCC unroll 8
    for (int i = 0; i < pairs; ++i) {
      v[i] = combine<kMax>(_mm512_permutex2var_epi32(v[2 * i], f, v[2 * i + 1]), _mm512_permutex2var_epi32(v[2 * i], b, v[2 * i + 1]));
    }
  }
  return v[0];
}

// I4: groups of 32 consecutive columns (the weight's groups); their 16 even and 16 odd columns
// are stored 16 bytes each at their nibble-order places. Groups [g0, g1), one at a time.
STATICLM_VNNI_TARGET void prepare_i4_groups(const float* x, std::int64_t g0, std::int64_t g1, VnniRow& out, double& total) {
  const std::int64_t k = out.k;
  const __m512i even = even_lanes(), odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (std::int64_t g = g0; g < g1; ++g) {
    const float* xg = x + g * kVnniGroup;
    const __m512 x0 = _mm512_loadu_ps(xg), x1 = _mm512_loadu_ps(xg + 16);
    const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float scale = m / 127.0f;
    const __m512 inv = _mm512_set1_ps(scale > 0 ? 1.0f / scale : 0.0f);
    const __m512i q0 = round_s8(_mm512_mul_ps(x0, inv)), q1 = round_s8(_mm512_mul_ps(x1, inv));
    const int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    // Column c = g * 32 + i of unit e: even i at e + (c - e) / 2, odd at that + half.
    const std::int64_t e = g * kVnniGroup / 128 * 128, half = e + 128 <= k ? 64 : 32;
    std::int8_t* at = out.xq.data() + e + (g * kVnniGroup - e) / 2;
    store_s8(at, _mm512_permutex2var_epi32(q0, even, q1));
    store_s8(at + half, _mm512_permutex2var_epi32(q0, odd, q1));
    out.scale[static_cast<std::size_t>(g)] = scale;
    out.group_bias[static_cast<std::size_t>(g)] = -8.0f * scale * static_cast<float>(sum);
    total += static_cast<double>(scale) * sum;
  }
}

// As prepare_i4_groups, 16 groups (512 columns, 4 whole units of 128) at once, with the same
// arithmetic: the per-group max and sum by reduce16, the scales and biases as vectors. The
// decode step runs this on the caller alone before each q4 GEMV (BM_PrepareVnniRow/4).
STATICLM_VNNI_TARGET void prepare_i4_block(const float* x, std::int64_t g0, VnniRow& out, double& total) {
  const __m512i even = even_lanes(), odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const float* xb = x + g0 * kVnniGroup;
  __m512i v[16];
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    const __m512 a = _mm512_abs_ps(_mm512_loadu_ps(xb + 32 * g)), b = _mm512_abs_ps(_mm512_loadu_ps(xb + 32 * g + 16));
    v[g] = _mm512_castps_si512(_mm512_max_ps(a, b));
  }
  const __m512 m = _mm512_castsi512_ps(reduce16<true>(v));
  const __m512 scale = _mm512_div_ps(m, _mm512_set1_ps(127.0f));
  const __m512 inv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(scale, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.0f), scale);
  alignas(64) float inv_of[16];
  _mm512_store_ps(inv_of, inv);
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    const __m512 r = _mm512_set1_ps(inv_of[g]);
    const __m512i q0 = round_s8(_mm512_mul_ps(_mm512_loadu_ps(xb + 32 * g), r));
    const __m512i q1 = round_s8(_mm512_mul_ps(_mm512_loadu_ps(xb + 32 * g + 16), r));
    v[g] = _mm512_add_epi32(q0, q1);
    // Group g of the block: unit g / 4, its 16 even columns at 16 * (g % 4), odd ones 64 later.
    std::int8_t* at = out.xq.data() + g0 * kVnniGroup + 128 * (g / 4) + 16 * (g % 4);
    store_s8(at, _mm512_permutex2var_epi32(q0, even, q1));
    store_s8(at + 64, _mm512_permutex2var_epi32(q0, odd, q1));
  }
  const __m512i sum = reduce16<false>(v);
  _mm512_storeu_ps(out.scale.data() + g0, scale);
  _mm512_storeu_ps(out.group_bias.data() + g0, _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(-8.0f), scale), _mm512_cvtepi32_ps(sum)));
  alignas(64) std::int32_t sum_of[16];
  _mm512_store_si512(sum_of, sum);
  for (int g = 0; g < 16; ++g) total += static_cast<double>(out.scale[static_cast<std::size_t>(g0 + g)]) * sum_of[g];
}

STATICLM_VNNI_TARGET void prepare_i4(const float* x, VnniRow& out) {
  const std::int64_t groups = out.k / kVnniGroup;
  double total = 0;
  std::int64_t g = 0;
  for (; g + 16 <= groups; g += 16) prepare_i4_block(x, g, out, total);
  prepare_i4_groups(x, g, groups, out, total);
  out.total = static_cast<float>(total);
}

// I8, U8, U4: lane groups. xs is x in stored order; in a chunk, block b's zmm j (stored positions
// 64 b + 16 j ..) holds lanes 4 j .. 4 j + 3, four values each.
STATICLM_VNNI_TARGET void prepare_lanes(const float* xs, VnniRow& out, bool fine) {
  const std::int64_t k = out.k;
  const __m512 steps = _mm512_set1_ps(kFineSteps), zero = _mm512_setzero_ps();
  double total = 0;
  for (std::int64_t c0 = 0, lane = 0; c0 < k; c0 += kVnniChunk, lane += kLanes) {
    const std::int64_t blocks = std::min(kVnniChunk, k - c0) / kBlock;
    __m512 inv[4], scale[4];
    __m512i sum[4], fine_sum[4];
    for (int j = 0; j < 4; ++j) {
      __m512 m = zero;
      for (std::int64_t b = 0; b < blocks; ++b) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(xs + c0 + b * kBlock + 16 * j)));
      scale[j] = _mm512_div_ps(max_within4(m), _mm512_set1_ps(127.0f));
      // 1 / scale, 0 for an all-zero group.
      inv[j] = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(scale[j], zero, _CMP_GT_OQ), _mm512_set1_ps(1.0f), scale[j]);
      sum[j] = fine_sum[j] = _mm512_setzero_si512();
    }
    for (std::int64_t b = 0; b < blocks; ++b) {
      for (int j = 0; j < 4; ++j) {
        const std::int64_t p = c0 + b * kBlock + 16 * j;
        const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(xs + p), inv[j]);
        const __m512i q = round_s8(v);
        store_s8(out.xq.data() + p, q);
        sum[j] = _mm512_add_epi32(sum[j], q);
        if (fine) {
          // The residual v - q (within half a step) in 1 / kFineSteps steps.
          const __m512i r = round_s8(_mm512_mul_ps(_mm512_sub_ps(v, _mm512_cvtepi32_ps(q)), steps));
          store_s8(out.xq_fine.data() + p, r);
          fine_sum[j] = _mm512_add_epi32(fine_sum[j], r);
        }
      }
    }
    // Lane 4 j + i's values sit at element 4 i of the zmm j sums: pick them out.
    alignas(64) float sc[64];
    alignas(64) std::int32_t ls[64], lf[64];
    for (int j = 0; j < 4; ++j) {
      _mm512_store_ps(sc + 16 * j, scale[j]);
      _mm512_store_si512(ls + 16 * j, sum_within4(sum[j]));
      _mm512_store_si512(lf + 16 * j, sum_within4(fine_sum[j]));
    }
    for (int l = 0; l < kLanes; ++l) {
      const auto at = static_cast<std::size_t>(lane + l);
      const float lane_scale = sc[4 * l];
      const std::int32_t lane_sum = ls[4 * l], lane_fine = lf[4 * l];
      out.scale[at] = lane_scale;
      total += static_cast<double>(lane_scale) * lane_sum;
      if (fine) {
        out.lane_init[at] = -128 * lane_sum;
        out.lane_init_fine[at] = -128 * lane_fine;
        total += static_cast<double>(lane_scale) * lane_fine / kFineSteps;
      }
    }
  }
  out.total = static_cast<float>(total);
}

}  // namespace

STATICLM_VNNI_TARGET float quantize_group_s8(const float* x, std::int8_t* q, int* sum) {
  static_assert(kVnniGroup == 32, "two zmm of f32 per group");
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  const float m = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
  const float scale = m / 127.0f;
  const __m512 inv = _mm512_set1_ps(scale > 0 ? 1.0f / scale : 0.0f);
  // Round to nearest even (the default MXCSR mode, as lrint); |x * inv| <= 127 up to rounding,
  // and the saturating narrowing clamps the rest.
  const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, inv)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, inv));
  const __m512i lim = _mm512_set1_epi32(127);
  const __m512i c0 = _mm512_max_epi32(_mm512_min_epi32(q0, lim), _mm512_sub_epi32(_mm512_setzero_si512(), lim));
  const __m512i c1 = _mm512_max_epi32(_mm512_min_epi32(q1, lim), _mm512_sub_epi32(_mm512_setzero_si512(), lim));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(c0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(c1));
  *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(c0, c1));
  return scale;
}

bool vnni_gemv_supported(DType wtype, std::int64_t k) {
  const bool quantized = wtype == DType::kI8 || wtype == DType::kI4 || wtype == DType::kU4 || wtype == DType::kU8;
  return quantized && k > 0 && k % kBlock == 0;
}

std::int64_t vnni_group_of(std::int64_t e, std::int64_t k, DType wtype) {
  if (wtype == DType::kI4) return e / kVnniGroup;
  const std::int64_t p = stored_at(e, k, nibbles(wtype));
  return p / kVnniChunk * kLanes + (p % kBlock) / 4;
}

STATICLM_VNNI_TARGET void prepare_vnni_row(const float* x, std::int64_t k, DType wtype, VnniRow& out) {
  out.wtype = wtype;
  out.k = k;
  out.xq.resize(static_cast<std::size_t>(k));
  const bool fine = wtype == DType::kI8;
  out.xq_fine.resize(fine ? static_cast<std::size_t>(k) : 0);
  if (wtype == DType::kI4) {
    out.scale.resize(static_cast<std::size_t>(k / kVnniGroup));
    out.group_bias.resize(static_cast<std::size_t>(k / kVnniGroup));
    out.lane_init.clear();
    out.lane_init_fine.clear();
    return prepare_i4(x, out);
  }
  const auto lanes = static_cast<std::size_t>((k + kVnniChunk - 1) / kVnniChunk * kLanes);
  out.scale.resize(lanes);
  out.group_bias.clear();
  out.lane_init.resize(fine ? lanes : 0);
  out.lane_init_fine.resize(fine ? lanes : 0);
  if (!nibbles(wtype)) return prepare_lanes(x, out, fine);
  static thread_local std::vector<float> stored;
  stored.resize(static_cast<std::size_t>(k));
  to_nibble_order(x, k, stored.data());
  prepare_lanes(stored.data(), out, fine);
}

void gemv_vnni(const VnniRow& x, const GemmArgs& a, float* y, std::int64_t j0, std::int64_t j1) {
  if (l2_prefetch()) {
    gemv_vnni_impl<true>(x, a, y, j0, j1);
  } else {
    gemv_vnni_impl<false>(x, a, y, j0, j1);
  }
}

}  // namespace staticlm::cpu
