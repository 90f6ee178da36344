// The read-bandwidth probe returns a real measurement (its size is a benchmark's business).
#include "base/bandwidth.h"

#include <gtest/gtest.h>

#include <cmath>

namespace staticlm {
namespace {

TEST(Bandwidth, PositiveAndFinite) {
  ThreadPool pool(2);
  for (bool huge_pages : {false, true}) {
    const double gb_s = measure_read_bandwidth(pool, std::size_t{64} << 20, 1, huge_pages);
    EXPECT_TRUE(std::isfinite(gb_s)) << huge_pages;
    EXPECT_GT(gb_s, 0.0) << huge_pages;
  }
}

}  // namespace
}  // namespace staticlm
