#include "runtime/argmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace staticlm {
namespace {

// The scalar definition: the first index of the largest non-NaN value (0 when there is none).
std::int64_t reference_argmax(const std::vector<float>& x) {
  std::int64_t best = -1;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) continue;
    if (best < 0 || x[i] > x[static_cast<std::size_t>(best)]) best = static_cast<std::int64_t>(i);
  }
  return best < 0 ? 0 : best;
}

// Every length around the vector widths and a vocabulary-sized one, the maximum at the start,
// in the middle, in the scalar tail and tied with a later copy.
TEST(Argmax, FirstLargestAtEveryLengthAndPlace) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 3.0f);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 1; n <= 70; ++n) lengths.push_back(n);
  lengths.push_back(262144);
  lengths.push_back(262147);
  for (const std::size_t n : lengths) {
    std::vector<float> x(n);
    for (float& v : x) v = g(rng);
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      std::vector<float> y = x;
      y[at] = 100.0f;
      if (at + 3 < n) y[at + 3] = 100.0f;  // a later tie: the first one wins
      ASSERT_EQ(argmax_first(y), static_cast<std::int64_t>(at)) << "n " << n;
      const MaxScan m = scan_max(y);
      EXPECT_EQ(m.max, 100.0f);
      EXPECT_FALSE(m.non_finite);
    }
    ASSERT_EQ(argmax_first(x), reference_argmax(x)) << "n " << n;
  }
}

// NaN is skipped by the maximum and reported; +Inf is the maximum and reported; -Inf is an
// ordinary (masked) value.
TEST(Argmax, NonFiniteValues) {
  for (const std::size_t n : {std::size_t{5}, std::size_t{37}, std::size_t{1000}}) {
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      std::vector<float> x(n, -INFINITY);
      x[(at + 1) % n] = 2.5f;
      x[at] = NAN;
      const MaxScan m = scan_max(x);
      EXPECT_TRUE(m.non_finite) << n << " " << at;
      EXPECT_EQ(m.max, 2.5f);
      EXPECT_EQ(argmax_first(x), static_cast<std::int64_t>((at + 1) % n));
      x[at] = INFINITY;
      EXPECT_TRUE(scan_max(x).non_finite);
      EXPECT_EQ(argmax_first(x), static_cast<std::int64_t>(at));
      x[at] = -INFINITY;
      EXPECT_FALSE(scan_max(x).non_finite);
    }
    const std::vector<float> masked(n, -INFINITY);
    EXPECT_EQ(scan_max(masked).max, -INFINITY);
    EXPECT_EQ(argmax_first(masked), 0);
    const std::vector<float> nans(n, NAN);
    EXPECT_EQ(argmax_first(nans), 0);
  }
  EXPECT_EQ(argmax_first(std::vector<float>{}), 0);
  EXPECT_EQ(first_index_of(std::vector<float>{1, 2, 3}, 4.0f), 3);
}

}  // namespace
}  // namespace staticlm
