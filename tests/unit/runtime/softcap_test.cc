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

// With a pool the threads cap parts of the logits: every value as the calling thread alone
// caps it (E2B's vocabulary plus a tail, so the parts end inside a vector width too), and every
// value capped (none left out at a part's edge).
TEST(Softcap, PoolCapsEveryLogitAsOneThreadDoes) {
  std::vector<float> x(262144 + 5);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * static_cast<float>(static_cast<int>(i % 20011) - 10005);
  std::vector<float> alone = x, shared = x;
  apply_final_softcap(alone, 30.0);
  ThreadPool pool(2);
  apply_final_softcap(shared, 30.0, &pool);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(shared[i], alone[i]) << "logit " << i;
    if (std::abs(x[i]) > 1.0f) {
      ASSERT_LT(std::abs(shared[i]), std::abs(x[i])) << "logit " << i << " not capped";
    }
  }
}

TEST(Softcap, NoCapLeavesLogitsAlone) {
  std::vector<float> x = {1e6f, -3.0f, 0.5f};
  apply_final_softcap(x, std::nullopt);
  EXPECT_EQ(x, (std::vector<float>{1e6f, -3.0f, 0.5f}));
}

}  // namespace
}  // namespace staticlm
