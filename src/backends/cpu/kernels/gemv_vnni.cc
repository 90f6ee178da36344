// AVX-512 VNNI decode GEMV for quantized weights; see gemv_vnni.h. Intrinsics in functions
// compiled for that target only (Highway 1.0.3 has no u8 x s8 dot product); dispatch.cc enables
// them only on CPUs that have the instructions.
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics headers as
// "may be used uninitialized" once they are inlined here; they are not read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "backends/cpu/kernels/gemv_vnni.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/formats.h"

#define STATICLM_VNNI_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))

namespace staticlm::cpu {

namespace {

constexpr std::int64_t kBlock = 64;  // activations per zmm of int8

bool nibbles(DType t) { return t == DType::kI4 || t == DType::kU4; }

// The position in its 64-element block where element e of the block is stored: a zmm of
// unpacked nibbles holds the 32 low nibbles (even elements) then the 32 high ones (odd).
std::int64_t stored_at(std::int64_t e, bool nibble_order) {
  if (!nibble_order) return e;
  return e % 2 == 0 ? e / 2 : 32 + e / 2;
}

// Prefetch distance, as the f32 GEMV (gemm.cc): weights are streamed once per token.
constexpr std::int64_t kPrefetchBytes = 4096;

STATICLM_VNNI_TARGET inline void prefetch(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_NTA);
}

STATICLM_VNNI_TARGET inline __m512i unpack_nibbles(const std::uint8_t* p) {
  // Both halves hold the 32 bytes; the upper half is shifted so its low nibbles are the high ones.
  const __m512i b = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_mask_srli_epi16(b, static_cast<__mmask32>(0xFFFF0000u), b, 4);
}

// One 64-byte block of a byte row: acc += lane_scale * (lane_init + u8 weights . s8 activations).
template <bool kFlip>
STATICLM_VNNI_TARGET inline void block_bytes(const VnniRow& x, const std::uint8_t* w, std::int64_t b, __m512& acc) {
  prefetch(w + b * kBlock);
  __m512i wv = _mm512_loadu_si512(w + b * kBlock);
  if constexpr (kFlip) wv = _mm512_xor_si512(wv, _mm512_set1_epi8(static_cast<char>(0x80)));  // s8 + 128
  const __m512i d = _mm512_dpbusd_epi32(_mm512_loadu_si512(x.lane_init.data() + b * 16), wv,
                                        _mm512_loadu_si512(x.xq.data() + b * kBlock));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_loadu_ps(x.lane_scale.data() + b * 16), acc);
}

// A byte row (I8 flipped to unsigned, U8 as is) against x; four accumulators hide the latency.
template <bool kFlip>
STATICLM_VNNI_TARGET float dot_bytes(const VnniRow& x, const std::uint8_t* w) {
  const std::int64_t blocks = x.k / kBlock;
  __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps(), f2 = _mm512_setzero_ps(), f3 = _mm512_setzero_ps();
  std::int64_t b = 0;
  for (; b + 4 <= blocks; b += 4) {
    block_bytes<kFlip>(x, w, b, f0);
    block_bytes<kFlip>(x, w, b + 1, f1);
    block_bytes<kFlip>(x, w, b + 2, f2);
    block_bytes<kFlip>(x, w, b + 3, f3);
  }
  for (; b < blocks; ++b) block_bytes<kFlip>(x, w, b, f0);
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(f0, f1), _mm512_add_ps(f2, f3)));
}

// One 64-element block of a U4 row: acc += lane_scale * (nibbles . activations).
STATICLM_VNNI_TARGET inline void block_u4(const VnniRow& x, const std::uint8_t* w, std::int64_t b, __m512& acc) {
  const __m512i u = _mm512_and_si512(unpack_nibbles(w + b * 32), _mm512_set1_epi8(0x0F));
  const __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, _mm512_loadu_si512(x.xq.data() + b * kBlock));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_loadu_ps(x.lane_scale.data() + b * 16), acc);
}

// U4 rows, two blocks (one cache line) per step into two accumulators held in registers.
STATICLM_VNNI_TARGET float dot_u4(const VnniRow& x, const std::uint8_t* w) {
  const std::int64_t blocks = x.k / kBlock;
  __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
  std::int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    prefetch(w + b * 32);
    block_u4(x, w, b, f0);
    block_u4(x, w, b + 1, f1);
  }
  if (b < blocks) block_u4(x, w, b, f0);
  return _mm512_reduce_add_ps(_mm512_add_ps(f0, f1));
}

// One 64-element block of an I4 row: acc += (weight x activation group scales, spread over the
// lanes by `pick`) * (lane_init + (nibble ^ 8) . activations).
STATICLM_VNNI_TARGET inline void block_i4(const VnniRow& x, const std::uint8_t* w, std::int64_t b,
                                          const std::int32_t* li, __m512 sv, __m512i pick, __m512& acc) {
  // (nibble & 0xF) ^ 8: the signed nibble plus 8, in 0..15.
  const __m512i u =
      _mm512_ternarylogic_epi32(unpack_nibbles(w + b * 32), _mm512_set1_epi8(0x0F), _mm512_set1_epi8(0x08), 0x6A);
  const __m512i d = _mm512_dpbusd_epi32(_mm512_loadu_si512(li + b * 16), u, _mm512_loadu_si512(x.xq.data() + b * kBlock));
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_permutexvar_ps(pick, sv), acc);
}

// I4 rows: each group's weight scale times its activation scale, per lane. Groups come 16 at a
// time (one f16 load); `pick[b]` spreads groups 2b, 2b + 1 over the lanes of block b.
STATICLM_VNNI_TARGET float dot_i4(const VnniRow& x, const std::uint8_t* w, const std::uint16_t* scales,
                                  const __m512i* pick) {
  const std::int64_t groups = x.k / kVnniGroup;
  __m512 f0 = _mm512_setzero_ps(), f1 = _mm512_setzero_ps();
  const std::int32_t* li = x.lane_init.data();
  for (std::int64_t g0 = 0; g0 < groups; g0 += 16) {
    const std::int64_t gn = std::min<std::int64_t>(16, groups - g0);
    const __mmask16 m = static_cast<__mmask16>(gn == 16 ? 0xFFFF : (1u << gn) - 1);
    const __m512 sw = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, scales + g0));
    const __m512 sv = _mm512_mul_ps(sw, _mm512_maskz_loadu_ps(m, x.group_scale.data() + g0));
    // Two blocks (one cache line) per step into two accumulators held in registers.
    std::int64_t j = 0;
    for (; j + 2 <= gn / 2; j += 2) {
      prefetch(w + (g0 / 2 + j) * 32);
      block_i4(x, w, g0 / 2 + j, li, sv, pick[j], f0);
      block_i4(x, w, g0 / 2 + j + 1, li, sv, pick[j + 1], f1);
    }
    if (j < gn / 2) block_i4(x, w, g0 / 2 + j, li, sv, pick[j], f0);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(f0, f1));
}

STATICLM_VNNI_TARGET void gemv_vnni_impl(const VnniRow& x, const GemmArgs& a, float* y, std::int64_t j0,
                                         std::int64_t j1) {
  const auto* w = static_cast<const std::uint8_t*>(a.w);
  const std::int64_t k = a.k;
  switch (a.wtype) {
    case DType::kI8: {
      const auto* s = static_cast<const float*>(a.scales);
      for (std::int64_t j = j0; j < j1; ++j) y[j] = dot_bytes<true>(x, w + j * k) * s[j];
      return;
    }
    case DType::kU8:
    case DType::kU4: {
      const auto* s = static_cast<const float*>(a.scales);
      const std::int64_t row = a.wtype == DType::kU8 ? k : k / 2;
      for (std::int64_t j = j0; j < j1; ++j) {
        const float d = a.wtype == DType::kU8 ? dot_bytes<false>(x, w + j * row) : dot_u4(x, w + j * row);
        y[j] = (d - static_cast<float>(a.zero_points[j]) * x.total) * s[j];
      }
      return;
    }
    default: {  // I4
      __m512i pick[8];
      for (int b = 0; b < 8; ++b) {
        alignas(64) std::int32_t idx[16];
        for (int l = 0; l < 16; ++l) idx[l] = 2 * b + ((l >> 2) & 1);
        pick[b] = _mm512_load_si512(idx);
      }
      const auto* s = static_cast<const std::uint16_t*>(a.scales);
      const std::int64_t groups = k / quant::kQ4Group;
      for (std::int64_t j = j0; j < j1; ++j) y[j] = dot_i4(x, w + j * (k / 2), s + j * groups, pick);
      return;
    }
  }
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

void prepare_vnni_row(const float* x, std::int64_t k, DType wtype, VnniRow& out) {
  const bool nib = nibbles(wtype);
  const int offset = wtype == DType::kI8 ? 128 : wtype == DType::kI4 ? 8 : 0;
  out.wtype = wtype;
  out.k = k;
  out.xq.assign(static_cast<std::size_t>(k), 0);
  out.group_scale.assign(static_cast<std::size_t>(k / kVnniGroup), 0.0f);
  out.lane_scale.assign(static_cast<std::size_t>(k / 4), 0.0f);
  out.lane_init.assign(static_cast<std::size_t>(k / 4), 0);
  double total = 0;
  std::int8_t q[kVnniGroup];
  for (std::int64_t g = 0; g < k / kVnniGroup; ++g) {
    int sum = 0;
    const float scale = quantize_group_s8(x + g * kVnniGroup, q, &sum);
    out.group_scale[static_cast<std::size_t>(g)] = scale;
    for (std::int64_t i = 0; i < kVnniGroup; ++i) {
      const std::int64_t e = g * kVnniGroup + i;
      const std::int64_t at = (e / kBlock) * kBlock + stored_at(e % kBlock, nib);
      out.xq[static_cast<std::size_t>(at)] = q[i];
      out.lane_scale[static_cast<std::size_t>(at / 4)] = scale;
    }
    total += static_cast<double>(scale) * sum;
  }
  for (std::int64_t l = 0; l < k / 4; ++l) {
    int s = 0;
    for (int i = 0; i < 4; ++i) s += out.xq[static_cast<std::size_t>(4 * l + i)];
    out.lane_init[static_cast<std::size_t>(l)] = -offset * s;
  }
  out.total = static_cast<float>(total);
}

void gemv_vnni(const VnniRow& x, const GemmArgs& a, float* y, std::int64_t j0, std::int64_t j1) {
  gemv_vnni_impl(x, a, y, j0, j1);
}

}  // namespace staticlm::cpu
