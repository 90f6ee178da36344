// q8 / q4 weight formats: the round-trip error stays within half a quantization step, the
// on-disk nibble order is the documented one, zero rows are exact, the matrix checks name the
// tensor at fault, and the q8 / q4 GEMV and GEMM on every kernel target equal
// dequantize-then-f32-matmul (computed in double here).
#include "quant/formats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/gemv_vnni.h"
#include "backends/cpu/kernels/matmul.h"
#include "base/error.h"
#include "base/half.h"

namespace staticlm::quant {
namespace {

std::vector<float> random_vec(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = g(rng);
  return v;
}

TEST(Q8, RoundTripWithinHalfAStep) {
  const std::int64_t rows = 7, cols = 45;
  auto w = random_vec(rows * cols, 1);
  for (std::int64_t c = 0; c < cols; ++c) w[3 * cols + c] = 0.0f;  // an all-zero row
  std::vector<std::int8_t> q(rows * cols);
  std::vector<float> s(rows), back(cols);
  quantize_q8(w, rows, cols, q, s);
  EXPECT_EQ(s[3], 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float mx = 0;
    for (std::int64_t c = 0; c < cols; ++c) mx = std::max(mx, std::abs(w[r * cols + c]));
    EXPECT_FLOAT_EQ(s[r], mx / 127.0f);
    dequantize_q8_row(q.data(), s.data(), r, cols, back.data());
    for (std::int64_t c = 0; c < cols; ++c) {
      ASSERT_LE(std::abs(back[c] - w[r * cols + c]), 0.5f * s[r] * 1.0001f) << r << " " << c;
      ASSERT_GE(q[r * cols + c], -127);
    }
  }
}

TEST(Q4, RoundTripWithinHalfAStepAndNibbleOrder) {
  const std::int64_t rows = 5, cols = 64;
  auto w = random_vec(rows * cols, 2, 0.02f);
  std::vector<std::uint8_t> q(rows * cols / 2);
  std::vector<std::uint16_t> s(rows * cols / kQ4Group);
  quantize_q4(w, rows, cols, q, s);
  std::vector<float> back(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    dequantize_q4_row(q.data(), s.data(), r, cols, back.data());
    for (std::int64_t c = 0; c < cols; ++c) {
      const float step = f16_to_f32(s[r * 2 + c / kQ4Group]);
      ASSERT_LE(std::abs(back[c] - w[r * cols + c]), 0.5f * step * 1.001f) << r << " " << c;
      ASSERT_GE(q4_value(q.data() + r * cols / 2, c), -7);
    }
  }
  // Documented layout: element 2i in the low nibble, 2i + 1 in the high one, two's complement.
  std::vector<float> e(32, 0.0f);
  e[0] = 7.0f;   // the group maximum: scale 1, value 7
  e[1] = -2.0f;  // value -2 = 0xE
  e[2] = -7.0f;
  std::vector<std::uint8_t> eq(16);
  std::vector<std::uint16_t> es(1);
  quantize_q4(e, 1, 32, eq, es);
  EXPECT_EQ(f16_to_f32(es[0]), 1.0f);
  EXPECT_EQ(eq[0], 0xE7);
  EXPECT_EQ(eq[1], 0x09);  // -7 = 0x9, then 0
}

TEST(Q4, WidthMustBeAMultipleOfTheGroup) {
  std::vector<float> w(40);
  std::vector<std::uint8_t> q(20);
  std::vector<std::uint16_t> s(1);
  try {
    quantize_q4(w, 1, 40, q, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("40 is not a multiple of the group size 32"), std::string::npos);
  }
}

TEST(QuantizedMatrix, ScaleTensorsAreChecked) {
  const Tensor q8 = Tensor(DType::kI8, Shape{4, 64});
  const Tensor bad_scale = Tensor(DType::kF16, Shape{4});
  try {
    cpu::quantized_weight_matrix(q8.view(), bad_scale.view(), "w");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("weight w_scale: F16 [4], expected F32 [4] for q8"), std::string::npos)
        << e.what();
  }
  const Tensor q4 = Tensor(DType::kI4, Shape{4, 64});
  const Tensor q4_scale = Tensor(DType::kF16, Shape{4, 2});
  EXPECT_EQ(cpu::quantized_weight_matrix(q4.view(), q4_scale.view(), "w").cols, 64);
}

TEST(Asym, RoundTripWithinHalfAStepZeroExactAndLayout) {
  for (int bits : {4, 8}) {
    const std::int64_t rows = 6, cols = 34;
    auto w = random_vec(rows * cols, 5 + bits, 0.1f);
    for (std::int64_t c = 0; c < cols; ++c) {
      w[2 * cols + c] = 0.0f;                       // all zero: scale 0
      w[3 * cols + c] = 0.05f + 0.01f * c;          // all positive: the range is widened to 0
    }
    w[cols + 5] = 0.0f;
    const std::int64_t row_bytes = bits == 4 ? cols / 2 : cols;
    std::vector<std::uint8_t> q(rows * row_bytes), z(rows);
    std::vector<float> s(rows), back(cols);
    quantize_asym(w, rows, cols, bits, q, s, z);
    EXPECT_EQ(s[2], 0.0f);
    EXPECT_EQ(z[3], 0);  // min is 0 after widening
    for (std::int64_t r = 0; r < rows; ++r) {
      dequantize_asym_row(q.data(), bits, s.data(), z.data(), r, cols, back.data());
      for (std::int64_t c = 0; c < cols; ++c) {
        ASSERT_LE(std::abs(back[c] - w[r * cols + c]), 0.5f * s[r] * 1.0001f + 1e-12f) << bits << " " << r << " " << c;
      }
    }
    dequantize_asym_row(q.data(), bits, s.data(), z.data(), 1, cols, back.data());
    EXPECT_EQ(back[5], 0.0f);  // zero is representable exactly
  }
  // U4 layout: element 2i in the low nibble; w = scale * (u - zero).
  const std::vector<float> e = {-3.0f, 12.0f, 0.0f, 1.0f};  // range 15: scale 1, zero 3
  std::vector<std::uint8_t> q(2), z(1);
  std::vector<float> s(1);
  quantize_asym(e, 1, 4, 4, q, s, z);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(z[0], 3);
  EXPECT_EQ(q[0], 0xF0);  // u = 0, 15
  EXPECT_EQ(q[1], 0x43);  // u = 3, 4
}

struct QuantizedCase {
  cpu::WeightMatrix w;
  std::vector<float> deq;  // [m, k] dequantized
  std::vector<float> raw;  // [m, k]: |value| * scale with the zero point added back (U4 / U8), for float error bounds
};

// The matrix wf [m, k] quantized as `t` (storage kept in `keep`).
QuantizedCase make_case(DType t, const std::vector<float>& wf, std::int64_t m, std::int64_t k,
                        std::vector<std::vector<std::uint8_t>>& keep) {
  QuantizedCase c;
  c.w = {t, m, k, nullptr};
  auto buffer = [&](std::size_t bytes) { keep.emplace_back(bytes); return keep.back().data(); };
  if (t == DType::kI8) {
    auto* q = reinterpret_cast<std::int8_t*>(buffer(m * k));
    auto* sc = reinterpret_cast<float*>(buffer(4 * m));
    quantize_q8(wf, m, k, {q, static_cast<std::size_t>(m * k)}, {sc, static_cast<std::size_t>(m)});
    c.w.data = q;
    c.w.scales = sc;
  } else if (t == DType::kI4) {
    auto* q = buffer(m * k / 2);
    auto* sc = reinterpret_cast<std::uint16_t*>(buffer(2 * m * k / kQ4Group));
    quantize_q4(wf, m, k, {q, static_cast<std::size_t>(m * k / 2)}, {sc, static_cast<std::size_t>(m * k / kQ4Group)});
    c.w.data = q;
    c.w.scales = sc;
  } else {
    const int bits = t == DType::kU4 ? 4 : 8;
    const std::size_t bytes = static_cast<std::size_t>(bits == 4 ? m * k / 2 : m * k);
    auto* q = buffer(bytes);
    auto* sc = reinterpret_cast<float*>(buffer(4 * m));
    auto* z = buffer(m);
    quantize_asym(wf, m, k, bits, {q, bytes}, {sc, static_cast<std::size_t>(m)}, {z, static_cast<std::size_t>(m)});
    c.w.data = q;
    c.w.scales = sc;
    c.w.zero_points = z;
  }
  c.deq.resize(m * k);
  c.raw.resize(m * k);
  for (std::int64_t r = 0; r < m; ++r) cpu::weight_row_f32(c.w, r, c.deq.data() + r * k);
  for (std::int64_t i = 0; i < m * k; ++i) {
    c.raw[i] = std::abs(c.deq[i]);
    if (c.w.zero_points) c.raw[i] += static_cast<const float*>(c.w.scales)[i / k] * 2.0f * c.w.zero_points[i / k];
  }
  return c;
}

// Every SIMD target and the scalar reference: the quantized matmul equals the f32 matmul of the
// dequantized matrix (double reference) for q8, q4 and npu-w4 (U4, U8), GEMV (n < 4) and GEMM
// rows alike, odd widths (8-bit formats), widths that the VNNI kernel takes (multiples of 64, incl. a partial chunk of q4
// scales) and widths it leaves to the f32 GEMV. Bounds: f32 rounding (2e-6 of sum |x w|); the
// VNNI GEMV and GEMM add the int8 rounding of x, at most half a step of x's group per element
// (and prove they ran by differing from the f32 result); the bf16 GEMM path rounds x and w to
// bf16 (2^-8).
// An activation as the int8 kernels see it, in steps of its group's scale (max|x| / 127): rounded
// to nearest even (q), plus, for q8's GEMV, the residual rounded in steps of 1/254 (r).
struct Int8Activation {
  float q = 0, r = 0;
  double value(float scale) const { return (static_cast<double>(q) + r / 254.0) * scale; }
};
Int8Activation int8_activation(float x, float scale, bool residual) {
  const float inv = scale > 0 ? 1.0f / scale : 0.0f;
  Int8Activation a;
  a.q = std::clamp(std::nearbyint(x * inv), -127.0f, 127.0f);
  if (residual) a.r = std::clamp(std::nearbyint((x * inv - a.q) * 254.0f), -127.0f, 127.0f);
  return a;
}

TEST(QuantizedMatrix, MatmulEqualsDequantizedOnEveryTarget) {
  ThreadPool pool(2);
  const std::string saved = cpu::kernel_target();
  // Widths: odd; not a multiple of 64; whole chunks of 512 and chunks ending in 128 or 64 columns.
  for (const std::int64_t k : {45, 96, 128, 192, 640, 1088}) {
    const std::int64_t m = 37;
    const auto wf = random_vec(m * k, 3 + static_cast<std::uint32_t>(k), 0.05f);
    std::vector<std::vector<std::uint8_t>> keep;
    for (DType t : {DType::kI8, DType::kI4, DType::kU4, DType::kU8}) {
      if ((t == DType::kI4 && k % kQ4Group != 0) || (t == DType::kU4 && k % 2 != 0)) continue;
      const QuantizedCase qc = make_case(t, wf, m, k, keep);
      for (bool bf16 : {false, true}) {
        cpu::WeightMatrix w = qc.w;
        w.bf16_activations = bf16;
        for (std::int64_t n : {1, 3, 4, 13, 40, 48}) {
          const auto x = random_vec(n * k, 4 + static_cast<std::uint32_t>(n));
          for (const std::string& target : cpu::kernel_targets()) {
            cpu::select_kernel_target(target);
            // bf16 activations on AMX: the AMX GEMM, weights rounded to bf16 as in the BF16 one.
            const bool amx = cpu::amx_kernels() && bf16 && n >= cpu::kGemvRows;
            // int8 activations: the VNNI GEMV (k % 64 == 0) and the VNNI GEMM (k % 32 == 0).
            const bool vnni = !amx && cpu::vnni_kernels() && (n < cpu::kGemvRows ? k % 64 == 0 : k % 32 == 0);
            const bool bf16_path = n >= cpu::kGemvRows && bf16 && (amx || (!vnni && cpu::bf16_dot_kernels()));
            std::vector<float> y(n * m, NAN);
            cpu::matmul(x.data(), n, w, y.data(), &pool);
            bool differs = false;
            const bool fine_gemv = t == DType::kI8 && n < cpu::kGemvRows;
            for (std::int64_t r = 0; r < n; ++r) {
              // max |x| of each int8 activation group: the GEMV's groups (vnni_group_of), the
              // GEMM's 32 consecutive columns.
              std::vector<float> gmax(static_cast<std::size_t>(k), 0.0f);
              for (std::int64_t i = 0; i < k; ++i) {
                const std::int64_t g = n < cpu::kGemvRows ? cpu::vnni_group_of(i, k, t) : i / 32;
                gmax[g] = std::max(gmax[g], std::abs(x[r * k + i]));
              }
              // x as the kernels quantize it: scale max|x| / 127 per group, round to nearest even;
              // the q8 GEMV adds the residual in steps of 1/254 of a step (also int8).
              const bool fine = t == DType::kI8 && n < cpu::kGemvRows;
              std::vector<double> xq(static_cast<std::size_t>(k));
              for (std::int64_t i = 0; i < k; ++i) {
                const float scale = gmax[n < cpu::kGemvRows ? cpu::vnni_group_of(i, k, t) : i / 32] / 127.0f;
                xq[i] = int8_activation(x[r * k + i], scale, fine).value(scale);
              }
              for (std::int64_t j = 0; j < m; ++j) {
                double ref = 0, mag = 0, raw = 0, xround = 0, ref_q = 0, mag_q = 0;
                for (std::int64_t i = 0; i < k; ++i) {
                  const double xi = x[r * k + i];
                  ref += xi * qc.deq[j * k + i];
                  mag += std::abs(xi * qc.deq[j * k + i]);
                  raw += std::abs(xi) * qc.raw[j * k + i];
                  const std::int64_t g = n < cpu::kGemvRows ? cpu::vnni_group_of(i, k, t) : i / 32;
                  xround += std::abs(qc.deq[j * k + i]) * gmax[g] / 127.0 / 2.0;
                  ref_q += xq[i] * qc.deq[j * k + i];
                  mag_q += std::abs(xq[i] * qc.deq[j * k + i]);
                }
                if (vnni) {
                  // The integer kernels compute exactly this up to f32 rounding of the scaled sums.
                  ASSERT_NEAR(y[r * m + j], ref_q, 4e-6 * (mag_q + raw) + 1e-30)
                      << "int8 activations: " << dtype_name(t) << " on " << target << ", k=" << k << ", n=" << n
                      << ", row " << r << " col " << j;
                }
                double bound = 2e-6 * (mag + raw) + 1e-30;
                if (vnni) bound += xround * 1.001;
                if (bf16_path) bound += std::ldexp(mag, -8);
                differs |= std::abs(y[r * m + j] - ref) > 2e-6 * (mag + raw);
                ASSERT_NEAR(y[r * m + j], ref, bound) << dtype_name(t) << " on " << target << ", k=" << k << ", n=" << n
                                                      << ", bf16=" << bf16 << ", row " << r << " col " << j;
              }
            }
            // (q8's GEMV keeps ~15 bits of x, too close to f32 to tell apart here: next test.)
            if ((vnni && !fine_gemv) || amx) {
              EXPECT_TRUE(differs) << "the " << (amx ? "AMX" : "VNNI") << " kernel did not run on " << target << " for "
                                   << dtype_name(t);
            }
          }
        }
      }
    }
  }
  cpu::select_kernel_target(saved);
}

// Runs body(target) on every kernel target with the VNNI kernels, then restores the dispatched
// target; false when the CPU has none.
bool on_vnni_targets(const std::function<void(const std::string&)>& body) {
  const std::string saved = cpu::kernel_target();
  bool ran = false;
  for (const std::string& target : cpu::kernel_targets()) {
    cpu::select_kernel_target(target);
    if (!cpu::vnni_kernels()) continue;
    ran = true;
    body(target);
  }
  cpu::select_kernel_target(saved);
  return ran;
}

// The q8 GEMV's activations: int8 per group plus an int8 residual in 1/254 steps. With one
// value per lane group 1000 times the others, the others fall below half a step of the int8
// rounding (lost without the residual) but keep about 1/254 of a step: the result must equal
// that two-level rounding, be far closer to f32 than the int8 rounding alone, and not be f32.
TEST(QuantizedMatrix, Q8GemvKeepsTheActivationResidual) {
  ThreadPool pool(2);
  const bool ran = on_vnni_targets([&](const std::string& target) {
    const std::int64_t m = 8, k = 512;
    std::vector<std::vector<std::uint8_t>> keep;
    const QuantizedCase qc = make_case(DType::kI8, random_vec(m * k, 7, 0.05f), m, k, keep);
    std::vector<float> x = random_vec(k, 8);
    std::vector<float> gmax(k, 0.0f);
    for (std::int64_t i = 0; i < k; ++i) {
      const std::int64_t g = cpu::vnni_group_of(i, k, DType::kI8);
      if (gmax[g] == 0.0f) x[i] = 1000.0f, gmax[g] = 1000.0f;  // the first value of each group
    }
    std::vector<float> y(m);
    cpu::matmul(x.data(), 1, qc.w, y.data(), &pool);
    double fine_err = 0, coarse_err = 0;  // squared, over the rows
    for (std::int64_t j = 0; j < m; ++j) {
      double f32 = 0, coarse = 0, fine = 0, mag = 0;
      for (std::int64_t i = 0; i < k; ++i) {
        const float scale = gmax[cpu::vnni_group_of(i, k, DType::kI8)] / 127.0f;
        const Int8Activation a = int8_activation(x[i], scale, true);
        const double wv = qc.deq[j * k + i];
        f32 += wv * x[i];
        coarse += wv * a.q * scale;
        fine += wv * a.value(scale);
        mag += std::abs(wv * a.value(scale));
      }
      EXPECT_NEAR(y[j], fine, 4e-6 * mag) << target << " row " << j;
      fine_err += (y[j] - f32) * (y[j] - f32);
      coarse_err += (coarse - f32) * (coarse - f32);
      EXPECT_GT(std::abs(y[j] - f32), 4e-6 * mag) << target << " row " << j << ": no rounding at all";
    }
    // Per value the residual leaves 1/254 of a step against a whole value (RMS 1 here, a step
    // 7.9): expected squared ratio about 1e-4.
    EXPECT_LT(fine_err, coarse_err / 400) << target;
  });
  if (!ran) GTEST_SKIP() << "no AVX-512 VNNI target on this CPU";
}

// The q4 GEMV's activation row (prepare_vnni_row for I4): groups of 32 consecutive columns,
// each quantized with scale max|x| / 127 and rounded to nearest even, stored in the order the
// weight's nibbles unpack to (per 128 columns the even ones, then the odd ones; a last 64
// columns in halves of 32), with per group -8 * scale * (sum of the group's int8 values), and
// the row's sum of scale * sum. Exact: whole blocks of 16 groups are computed 16 at a time and
// the rest one group at a time, and both must equal this scalar model bit for bit. Widths: under
// one block, one block, blocks plus a last 64 columns, E2B's widths.
TEST(QuantizedMatrix, PrepareVnniRowI4EqualsTheScalarRounding) {
  const bool ran = on_vnni_targets([](const std::string& target) {
    for (const std::int64_t k : {64, 192, 512, 1088, 1536, 2048, 12288}) {
      std::vector<float> x = random_vec(k, 11 + static_cast<std::uint32_t>(k));
      for (std::int64_t i = 0; i < 32; ++i) x[i] = 0.0f;  // an all-zero group
      x[k - 7] = 1e4f;                                     // a group of one large value and small ones
      cpu::VnniRow row;
      cpu::prepare_vnni_row(x.data(), k, DType::kI4, row);
      ASSERT_EQ(row.xq.size(), static_cast<std::size_t>(k));
      ASSERT_EQ(row.scale.size(), static_cast<std::size_t>(k / 32));
      ASSERT_EQ(row.group_bias.size(), static_cast<std::size_t>(k / 32));
      double total = 0;
      for (std::int64_t g = 0; g < k / 32; ++g) {
        float m = 0;
        for (std::int64_t i = 0; i < 32; ++i) m = std::max(m, std::abs(x[g * 32 + i]));
        const float scale = m / 127.0f;
        int sum = 0;
        for (std::int64_t i = 0; i < 32; ++i) {
          const std::int64_t c = g * 32 + i, unit = c / 128 * 128, half = unit + 128 <= k ? 64 : 32;
          const std::int64_t at = unit + (c - unit) % 2 * half + (c - unit) / 2;
          const auto q = static_cast<int>(int8_activation(x[c], scale, false).q);
          sum += q;
          ASSERT_EQ(row.xq[at], q) << target << " k=" << k << " column " << c;
        }
        ASSERT_EQ(row.scale[g], scale) << target << " k=" << k << " group " << g;
        ASSERT_EQ(row.group_bias[g], -8.0f * scale * static_cast<float>(sum)) << target << " k=" << k << " group " << g;
        total += static_cast<double>(scale) * sum;
      }
      EXPECT_EQ(row.total, static_cast<float>(total)) << target << " k=" << k;
      EXPECT_EQ(row.scale[0], 0.0f);
    }
  });
  if (!ran) GTEST_SKIP() << "no AVX-512 VNNI target on this CPU";
}

}  // namespace
}  // namespace staticlm::quant
