// AVX-512 VNNI GEMM for quantized weights; see gemm_int8.h. Layout: a strip of kNr output columns
// is packed once with all of k (u8 values, 4 consecutive k of one column per u32: the operand
// `vpdpbusd` multiplies with 4 broadcast activations), then every block of kMr rows runs over it.
// Weights are made unsigned as in the GEMV: I8 + 128, I4 + 8 (both removed exactly by starting
// each group's int32 sum at -offset x the group's activation sum); U4 / U8 zero points are
// applied per column at the end.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on its own intrinsics, see gemv_vnni.cc
#include <immintrin.h>

#include "backends/cpu/kernels/gemm_int8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/kernels/gemv_vnni.h"
#include "base/half.h"
#include "quant/formats.h"

#define STATICLM_VNNI_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))

namespace staticlm::cpu {

namespace {

constexpr std::int64_t kNr = kGemmColumnBlock;  // 32 columns: two zmm of int32
constexpr int kMr = 4;                          // rows: 8 int32 + 8 f32 accumulators
constexpr std::int64_t kGroup = kVnniGroup;
constexpr std::int64_t kQuadsPerGroup = kGroup / 4;

// What the micro-kernel needs of one packed strip.
struct Strip {
  const std::uint32_t* quads;  // [k / 4][kNr]
  const float* group_scale;    // I4 only: [k / 32][kNr]
  std::int32_t offset;         // I8 128, I4 8, else 0
};

// Unpacks row j of the quantized matrix into k unsigned bytes in k order (I8 + 128, I4 + 8).
STATICLM_VNNI_TARGET void unsigned_row(const GemmArgs& a, std::int64_t j, std::uint8_t* out) {
  const auto* w = static_cast<const std::uint8_t*>(a.w);
  const std::int64_t k = a.k;
  switch (a.wtype) {
    case DType::kI8: {
      const std::uint8_t* row = w + j * k;
      for (std::int64_t i = 0; i < k; ++i) out[i] = static_cast<std::uint8_t>(row[i] ^ 0x80);
      return;
    }
    case DType::kU8:
      std::memcpy(out, w + j * k, static_cast<std::size_t>(k));
      return;
    default: {  // I4 (two's complement nibbles, + 8 by flipping bit 3) or U4; k % 32 == 0
      const __m128i flip = _mm_set1_epi8(a.wtype == DType::kI4 ? static_cast<char>(0x88) : 0);
      const __m128i low = _mm_set1_epi8(0x0F);
      const std::uint8_t* row = w + j * (k / 2);
      for (std::int64_t i = 0; i < k / 2; i += 16) {
        const __m128i b = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + i)), flip);
        const __m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), _mm_unpacklo_epi8(lo, hi));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i + 16), _mm_unpackhi_epi8(lo, hi));
      }
      return;
    }
  }
}

// Packs columns [j0, j0 + nc) (zero past nc): quads[q][c] = bytes 4q..4q+3 of column c; for I4
// the f16 group scales as f32 [g][c].
STATICLM_VNNI_TARGET void pack_strip(const GemmArgs& a, std::int64_t j0, std::int64_t nc, std::uint32_t* quads, float* group_scale,
                std::uint8_t* row) {
  const std::int64_t nq = a.k / 4, groups = a.k / kGroup;
  for (std::int64_t c = 0; c < kNr; ++c) {
    if (c >= nc) {
      for (std::int64_t q = 0; q < nq; ++q) quads[q * kNr + c] = 0;
      if (group_scale) {
        for (std::int64_t g = 0; g < groups; ++g) group_scale[g * kNr + c] = 0.0f;
      }
      continue;
    }
    unsigned_row(a, j0 + c, row);
    for (std::int64_t q = 0; q < nq; ++q) std::memcpy(&quads[q * kNr + c], row + 4 * q, 4);
    if (group_scale) {
      const auto* s = static_cast<const std::uint16_t*>(a.scales) + (j0 + c) * groups;
      for (std::int64_t g = 0; g < groups; ++g) group_scale[g * kNr + c] = f16_to_f32(s[g]);
    }
  }
}

// acc[m][:] for rows r0..r0+M-1 against the strip, over all of k, in f32: sum over groups of
// scale(x group) [x I4 column group scale] x (int32 sum of the group).
template <int M>
STATICLM_VNNI_TARGET void micro(const Int8Rows& x, std::int64_t r0, const Strip& s, __m512 out[kMr][2]) {
  const std::int64_t groups = x.k / kGroup, nq = x.k / 4;
  __m512 f[M][2];
  for (int m = 0; m < M; ++m) f[m][0] = f[m][1] = _mm512_setzero_ps();
  for (std::int64_t g = 0; g < groups; ++g) {
    __m512i acc[M][2];
    for (int m = 0; m < M; ++m) {
      acc[m][0] = acc[m][1] = _mm512_set1_epi32(-s.offset * x.sum[static_cast<std::size_t>((r0 + m) * groups + g)]);
    }
    const std::uint32_t* wq = s.quads + g * kQuadsPerGroup * kNr;
    for (std::int64_t q = 0; q < kQuadsPerGroup; ++q) {
      const __m512i w0 = _mm512_load_si512(wq + q * kNr);
      const __m512i w1 = _mm512_load_si512(wq + q * kNr + 16);
      for (int m = 0; m < M; ++m) {
        const __m512i xb = _mm512_set1_epi32(
            static_cast<int>(x.quads[static_cast<std::size_t>((r0 + m) * nq + g * kQuadsPerGroup + q)]));
        acc[m][0] = _mm512_dpbusd_epi32(acc[m][0], w0, xb);
        acc[m][1] = _mm512_dpbusd_epi32(acc[m][1], w1, xb);
      }
    }
    if (s.group_scale) {
      const __m512 g0 = _mm512_load_ps(s.group_scale + g * kNr), g1 = _mm512_load_ps(s.group_scale + g * kNr + 16);
      for (int m = 0; m < M; ++m) {
        const __m512 sx = _mm512_set1_ps(x.scale[static_cast<std::size_t>((r0 + m) * groups + g)]);
        f[m][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][0]), _mm512_mul_ps(g0, sx), f[m][0]);
        f[m][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][1]), _mm512_mul_ps(g1, sx), f[m][1]);
      }
    } else {
      for (int m = 0; m < M; ++m) {
        const __m512 sx = _mm512_set1_ps(x.scale[static_cast<std::size_t>((r0 + m) * groups + g)]);
        f[m][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][0]), sx, f[m][0]);
        f[m][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[m][1]), sx, f[m][1]);
      }
    }
  }
  for (int m = 0; m < M; ++m) {
    out[m][0] = f[m][0];
    out[m][1] = f[m][1];
  }
}

STATICLM_VNNI_TARGET void gemm_int8_impl(const Int8Rows& x, const GemmArgs& a, std::int64_t j0, std::int64_t j1) {
  static thread_local AlignedScratch quad_scratch, scale_scratch, row_scratch;
  const std::int64_t groups = a.k / kGroup;
  auto* quads = static_cast<std::uint32_t*>(quad_scratch.get(sizeof(std::uint32_t) * (a.k / 4) * kNr));
  float* gscale = a.wtype == DType::kI4 ? static_cast<float*>(scale_scratch.get(sizeof(float) * groups * kNr)) : nullptr;
  auto* row = static_cast<std::uint8_t*>(row_scratch.get(static_cast<std::size_t>(a.k)));
  const Strip s{quads, gscale, a.wtype == DType::kI8 ? 128 : a.wtype == DType::kI4 ? 8 : 0};
  for (std::int64_t jc = j0; jc < j1; jc += kNr) {
    const std::int64_t nc = std::min(kNr, j1 - jc);
    pack_strip(a, jc, nc, quads, gscale, row);
    // Per-column scale and zero point (I8, U4, U8), padded past nc.
    alignas(64) float cs[kNr] = {}, cz[kNr] = {};
    if (a.wtype != DType::kI4) {
      for (std::int64_t c = 0; c < nc; ++c) {
        cs[c] = static_cast<const float*>(a.scales)[jc + c];
        cz[c] = a.zero_points ? static_cast<float>(a.zero_points[jc + c]) : 0.0f;
      }
    }
    const __mmask16 lo = static_cast<__mmask16>(nc >= 16 ? 0xFFFF : (1u << nc) - 1);
    const __mmask16 hi = static_cast<__mmask16>(nc >= 32 ? 0xFFFF : nc <= 16 ? 0 : (1u << (nc - 16)) - 1);
    for (std::int64_t r0 = 0; r0 < x.n; r0 += kMr) {
      const int mr = static_cast<int>(std::min<std::int64_t>(kMr, x.n - r0));
      __m512 f[kMr][2];
      switch (mr) {
        case 4: micro<4>(x, r0, s, f); break;
        case 3: micro<3>(x, r0, s, f); break;
        case 2: micro<2>(x, r0, s, f); break;
        default: micro<1>(x, r0, s, f); break;
      }
      for (int m = 0; m < mr; ++m) {
        __m512 o0 = f[m][0], o1 = f[m][1];
        if (a.wtype != DType::kI4) {  // scale x (sum - zero x row total)
          const __m512 t = _mm512_set1_ps(x.total[static_cast<std::size_t>(r0 + m)]);
          o0 = _mm512_mul_ps(_mm512_fnmadd_ps(_mm512_load_ps(cz), t, o0), _mm512_load_ps(cs));
          o1 = _mm512_mul_ps(_mm512_fnmadd_ps(_mm512_load_ps(cz + 16), t, o1), _mm512_load_ps(cs + 16));
        }
        float* y = a.y + (r0 + m) * a.ldy + jc;
        _mm512_mask_storeu_ps(y, lo, o0);
        _mm512_mask_storeu_ps(y + 16, hi, o1);
      }
    }
  }
}

}  // namespace

bool int8_gemm_supported(DType wtype, std::int64_t k) {
  const bool quantized = wtype == DType::kI8 || wtype == DType::kI4 || wtype == DType::kU4 || wtype == DType::kU8;
  return quantized && k > 0 && k % kGroup == 0;
}

void prepare_int8_rows(const float* x, std::int64_t n, std::int64_t k, Int8Rows& out, ThreadPool* pool) {
  const std::int64_t groups = k / kGroup;
  out.n = n;
  out.k = k;
  out.quads.resize(static_cast<std::size_t>(n * (k / 4)));
  out.scale.resize(static_cast<std::size_t>(n * groups));
  out.sum.resize(static_cast<std::size_t>(n * groups));
  out.total.resize(static_cast<std::size_t>(n));
  parallel_for(pool, n, 1, static_cast<double>(k) * 4, [&](std::int64_t r0, std::int64_t r1, int) {
    for (std::int64_t r = r0; r < r1; ++r) {
      auto* q = reinterpret_cast<std::int8_t*>(out.quads.data() + r * (k / 4));
      double total = 0;
      for (std::int64_t g = 0; g < groups; ++g) {
        int sum = 0;
        const float scale = quantize_group_s8(x + r * k + g * kGroup, q + g * kGroup, &sum);
        out.scale[static_cast<std::size_t>(r * groups + g)] = scale;
        out.sum[static_cast<std::size_t>(r * groups + g)] = sum;
        total += static_cast<double>(scale) * sum;
      }
      out.total[static_cast<std::size_t>(r)] = static_cast<float>(total);
    }
  });
}

void gemm_int8(const Int8Rows& x, const GemmArgs& a, std::int64_t j0, std::int64_t j1) { gemm_int8_impl(x, a, j0, j1); }

}  // namespace staticlm::cpu
