// 2-D RoPE of the vision encoder against closed forms: each (j, j + hd/4) pair of the first half
// turns like the complex number z = a + i b times e^{i x f_j}, of the second half by e^{i y f_j}
// (computed here in double complex arithmetic), and q.k depends only on the position offset.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "backends/cpu/kernels/rope2d.h"

namespace staticlm::cpu {
namespace {

std::vector<float> random_vec(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

TEST(Rope2d, MatchesComplexRotationPerAxis) {
  const std::int64_t hd = 64, heads = 2, n = 3;
  const double theta = 100.0;
  const std::vector<std::int64_t> pos = {0, 0, 7, 2, 41, 29};  // (x, y) per row
  std::vector<float> cos(n * hd), sin(n * hd);
  build_rope2d_tables(pos.data(), n, hd, theta, cos.data(), sin.data());
  const std::vector<float> x0 = random_vec(n * heads * hd, 1);
  std::vector<float> x = x0;
  apply_rope2d(x.data(), n, heads, hd, cos.data(), sin.data());
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const float* in = x0.data() + (r * heads + h) * hd;
      const float* out = x.data() + (r * heads + h) * hd;
      for (int axis = 0; axis < 2; ++axis) {
        const double p = static_cast<double>(pos[r * 2 + axis]);
        for (int j = 0; j < 16; ++j) {
          const int a = axis * 32 + j, b = a + 16;
          const double f = std::pow(theta, -2.0 * j / 32.0);
          const std::complex<double> z = std::complex<double>(in[a], in[b]) * std::polar(1.0, p * f);
          EXPECT_NEAR(out[a], z.real(), 2e-5) << "row " << r << " dim " << a;
          EXPECT_NEAR(out[b], z.imag(), 2e-5) << "row " << r << " dim " << b;
        }
      }
    }
  }
}

TEST(Rope2d, XMovesOnlyFirstHalfAndYOnlySecond) {
  const std::int64_t hd = 64;
  const std::vector<std::int64_t> pos = {5, 0, 0, 5};
  std::vector<float> cos(2 * hd), sin(2 * hd);
  build_rope2d_tables(pos.data(), 2, hd, 100.0, cos.data(), sin.data());
  const std::vector<float> v = random_vec(hd, 2);
  std::vector<float> x(v);
  x.insert(x.end(), v.begin(), v.end());
  apply_rope2d(x.data(), 2, 1, hd, cos.data(), sin.data());
  for (int d = 32; d < 64; ++d) EXPECT_EQ(x[d], v[d]) << "y = 0 leaves dim " << d;
  for (int d = 0; d < 32; ++d) EXPECT_EQ(x[hd + d], v[d]) << "x = 0 leaves dim " << d;
  EXPECT_GT(std::abs(x[0] - v[0]) + std::abs(x[16] - v[16]), 1e-3);
  EXPECT_GT(std::abs(x[hd + 32] - v[32]) + std::abs(x[hd + 48] - v[48]), 1e-3);
}

TEST(Rope2d, DotProductDependsOnlyOnOffset) {
  const std::int64_t hd = 64;
  // q at (3, 4), k at (10, 1); shifted by (+6, +9) both.
  const std::vector<std::int64_t> pos = {3, 4, 10, 1, 9, 13, 16, 10};
  std::vector<float> cos(4 * hd), sin(4 * hd);
  build_rope2d_tables(pos.data(), 4, hd, 100.0, cos.data(), sin.data());
  const std::vector<float> q = random_vec(hd, 3), k = random_vec(hd, 4);
  std::vector<float> x;
  for (const auto* v : {&q, &k, &q, &k}) x.insert(x.end(), v->begin(), v->end());
  apply_rope2d(x.data(), 4, 1, hd, cos.data(), sin.data());
  double a = 0, b = 0, raw = 0;
  for (int d = 0; d < hd; ++d) {
    a += static_cast<double>(x[d]) * x[hd + d];
    b += static_cast<double>(x[2 * hd + d]) * x[3 * hd + d];
    raw += static_cast<double>(q[d]) * k[d];
  }
  EXPECT_NEAR(a, b, 1e-4);
  EXPECT_GT(std::abs(a - raw), 1e-3);  // the rotation did change the product
}

}  // namespace
}  // namespace staticlm::cpu
