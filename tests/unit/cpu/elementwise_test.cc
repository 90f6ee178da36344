#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/rmsnorm.h"
#include "backends/cpu/kernels/rope_apply.h"
#include "runtime/rope.h"

namespace staticlm::cpu {
namespace {

TEST(RmsNorm, ClosedForm) {
  // x = [3, 4]: mean of squares 12.5.
  const std::vector<float> x = {3.0f, 4.0f, -3.0f, -4.0f};
  const std::vector<float> w = {2.0f, 0.5f};
  std::vector<float> y(4);
  rms_norm(x.data(), 2, 2, w.data(), 1e-6f, y.data());
  const double inv = 1.0 / std::sqrt(12.5 + 1e-6);
  EXPECT_NEAR(y[0], 3 * inv * 2, 1e-6);
  EXPECT_NEAR(y[1], 4 * inv * 0.5, 1e-6);
  EXPECT_NEAR(y[2], -3 * inv * 2, 1e-6);
  // Weightless (the V norm): unit root-mean-square output.
  rms_norm(x.data(), 2, 2, nullptr, 0.0f, y.data());
  EXPECT_NEAR(y[0] * y[0] + y[1] * y[1], 2.0, 1e-6);
  // In place.
  std::vector<float> z = x;
  rms_norm(z.data(), 2, 2, w.data(), 1e-6f, z.data());
  EXPECT_NEAR(z[1], 4 * inv * 0.5, 1e-6);
}

TEST(RmsNorm, EpsKeepsZeroFinite) {
  const std::vector<float> x(8, 0.0f);
  std::vector<float> y(8, 1.0f);
  rms_norm(x.data(), 1, 8, nullptr, 1e-6f, y.data());
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(Gelu, TanhApproximation) {
  EXPECT_EQ(gelu_tanh(0.0f), 0.0f);
  for (double x : {-6.0, -1.5, -0.3, 0.2, 1.0, 2.5, 8.0}) {
    const double ref = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(gelu_tanh(static_cast<float>(x)), ref, 1e-6) << x;
  }
  EXPECT_NEAR(gelu_tanh(1.0f), 0.841192, 1e-6);  // the familiar value of the tanh form
  std::vector<float> g = {1.0f, -6.0f}, u = {2.0f, 3.0f};
  gelu_tanh_mul(g.data(), u.data(), 2);
  EXPECT_NEAR(g[0], 2 * 0.841192, 2e-6);
  EXPECT_NEAR(g[1], 3 * gelu_tanh(-6.0f), 1e-9);
}

struct Table {
  std::vector<float> cos, sin;
};

Table table(std::int64_t hd, std::int64_t rotary, double theta, std::int64_t pos, RopeSine sine) {
  const auto inv = rope_inv_freq(theta, hd, rotary);
  Table t{std::vector<float>(hd), std::vector<float>(hd)};
  build_rope_table(inv, pos, 1, sine, t.cos, t.sin);
  return t;
}

std::vector<float> rotated(std::vector<float> x, std::int64_t hd, std::int64_t rotary, std::int64_t pos, RopeSine sine) {
  const Table t = table(hd, rotary, 10000.0, pos, sine);
  apply_rope(x.data(), 1, static_cast<std::int64_t>(x.size()) / hd, hd, t.cos.data(), t.sin.data(), sine);
  return x;
}

std::vector<float> sample(std::int64_t n, int seed) {
  std::vector<float> x(n);
  for (std::int64_t i = 0; i < n; ++i) x[i] = std::sin(0.7 * i + seed) * 2.0f;
  return x;
}

// Pair (j, j + hd/2) rotates by angle pos * inv_freq[j]: the closed form of rotate_half.
TEST(Rope, RotatesHalfPairs) {
  const std::int64_t hd = 8;
  const auto x = sample(hd, 1);
  const auto y = rotated(x, hd, hd, 5, RopeSine::kHf);
  const auto inv = rope_inv_freq(10000.0, hd, hd);
  for (int j = 0; j < 4; ++j) {
    const double a = static_cast<double>(5.0f * inv[j]);
    EXPECT_NEAR(y[j], x[j] * std::cos(a) - x[j + 4] * std::sin(a), 1e-5);
    EXPECT_NEAR(y[j + 4], x[j + 4] * std::cos(a) + x[j] * std::sin(a), 1e-5);
  }
}

// The two sine conventions are the same rotation (the graph and the table trade the sign).
TEST(Rope, BothConventionsAgree) {
  for (std::int64_t pos : {0, 1, 17, 300}) {
    const auto x = sample(3 * 32, 2);
    const auto a = rotated(x, 32, 8, pos, RopeSine::kHf);
    const auto b = rotated(x, 32, 8, pos, RopeSine::kPreNegatedSin);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(a[i], b[i]) << pos << " " << i;
  }
}

// Relative position: <rope(q, m), rope(k, n)> depends only on m - n.
TEST(Rope, DotProductDependsOnRelativePosition) {
  const std::int64_t hd = 16;
  const auto q = sample(hd, 3), k = sample(hd, 4);
  auto dot_at = [&](std::int64_t m, std::int64_t n) {
    const auto a = rotated(q, hd, hd, m, RopeSine::kPreNegatedSin);
    const auto b = rotated(k, hd, hd, n, RopeSine::kPreNegatedSin);
    double d = 0;
    for (std::int64_t i = 0; i < hd; ++i) d += a[i] * b[i];
    return d;
  };
  EXPECT_NEAR(dot_at(7, 3), dot_at(104, 100), 1e-4);
  EXPECT_NEAR(dot_at(3, 3), dot_at(0, 0), 1e-4);
  EXPECT_GT(std::abs(dot_at(7, 3) - dot_at(3, 7)), 1e-3);  // and it is not symmetric
}

// Proportional RoPE leaves the non-rotary dims untouched and preserves each pair's norm.
TEST(Rope, ProportionalPassesNopeDims) {
  const std::int64_t hd = 32, rotary = 8;
  const auto x = sample(hd, 5);
  const auto y = rotated(x, hd, rotary, 41, RopeSine::kHf);
  for (int j = 4; j < 16; ++j) {
    EXPECT_EQ(y[j], x[j]);
    EXPECT_EQ(y[j + 16], x[j + 16]);
  }
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(y[j] * y[j] + y[j + 16] * y[j + 16], x[j] * x[j] + x[j + 16] * x[j + 16], 1e-5);
    EXPECT_NE(y[j], x[j]);
  }
}

}  // namespace
}  // namespace staticlm::cpu
