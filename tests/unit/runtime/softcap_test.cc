// Final logit soft-capping: the vectorized tanh stays within a few ulp of std::tanh(x / cap) *
// cap across the range logits take (and far beyond), including the vector tail; no cap, no change.
#include "runtime/softcap.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace staticlm {
namespace {

TEST(Softcap, MatchesStdTanhWithinAFewUlp) {
  std::vector<float> x;
  for (int i = -4000; i <= 4000; ++i) x.push_back(0.05f * static_cast<float>(i));  // -200 .. 200
  for (float v : {1e-30f, -1e-30f, 1e6f, -1e6f, 3e38f, -3e38f, 0.0f}) x.push_back(v);
  x.push_back(7.0f);  // 8008 values: a tail past any vector width
  std::vector<float> y = x;
  apply_final_softcap(y, 30.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::tanh(static_cast<double>(x[i]) / 30.0) * 30.0;
    ASSERT_NEAR(y[i], want, 4.0 * 30.0 * 1.2e-7 * std::max(std::abs(want) / 30.0, 1e-3)) << "x = " << x[i];
  }
}

TEST(Softcap, NoCapLeavesLogitsAlone) {
  std::vector<float> x = {1e6f, -3.0f, 0.5f};
  apply_final_softcap(x, std::nullopt);
  EXPECT_EQ(x, (std::vector<float>{1e6f, -3.0f, 0.5f}));
}

}  // namespace
}  // namespace staticlm
