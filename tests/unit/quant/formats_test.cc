// q8 / q4 weight formats: the round-trip error stays within half a quantization step, the
// on-disk nibble order is the documented one, zero rows are exact, the matrix checks name the
// tensor at fault, and the q8 / q4 GEMV and GEMM on every kernel target equal
// dequantize-then-f32-matmul (computed in double here).
#include "quant/formats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/dispatch.h"
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

// Every SIMD target and the scalar reference: the quantized matmul equals the f32 matmul of the
// dequantized matrix (double reference), GEMV (n < 4) and GEMM rows alike.
TEST(QuantizedMatrix, MatmulEqualsDequantizedOnEveryTarget) {
  const std::int64_t m = 37, k = 96;
  const auto wf = random_vec(m * k, 3, 0.05f);
  std::vector<std::int8_t> q8(m * k);
  std::vector<float> s8(m);
  quantize_q8(wf, m, k, q8, s8);
  std::vector<std::uint8_t> q4(m * k / 2);
  std::vector<std::uint16_t> s4(m * k / kQ4Group);
  quantize_q4(wf, m, k, q4, s4);
  cpu::WeightMatrix w8{DType::kI8, m, k, q8.data()};
  w8.scales = s8.data();
  cpu::WeightMatrix w4{DType::kI4, m, k, q4.data()};
  w4.scales = s4.data();
  ThreadPool pool(2);
  const std::string saved = cpu::kernel_target();
  for (const cpu::WeightMatrix& w : {w8, w4}) {
    std::vector<float> deq(m * k);
    for (std::int64_t r = 0; r < m; ++r) (w.dtype == DType::kI8 ? dequantize_q8_row(q8.data(), s8.data(), r, k, deq.data() + r * k)
                                                                : dequantize_q4_row(q4.data(), s4.data(), r, k, deq.data() + r * k));
    for (std::int64_t n : {1, 3, 4, 13}) {
      const auto x = random_vec(n * k, 4 + static_cast<std::uint32_t>(n));
      for (const std::string& t : cpu::kernel_targets()) {
        cpu::select_kernel_target(t);
        std::vector<float> y(n * m, NAN);
        cpu::matmul(x.data(), n, w, y.data(), &pool);
        for (std::int64_t r = 0; r < n; ++r) {
          for (std::int64_t j = 0; j < m; ++j) {
            double ref = 0, mag = 0;
            for (std::int64_t i = 0; i < k; ++i) {
              ref += double(x[r * k + i]) * deq[j * k + i];
              mag += std::abs(double(x[r * k + i]) * deq[j * k + i]);
            }
            ASSERT_NEAR(y[r * m + j], ref, 2e-6 * mag + 1e-30)
                << dtype_name(w.dtype) << " on " << t << ", n=" << n << " row " << r << " col " << j;
          }
        }
      }
    }
  }
  cpu::select_kernel_target(saved);
}

}  // namespace
}  // namespace staticlm::quant
