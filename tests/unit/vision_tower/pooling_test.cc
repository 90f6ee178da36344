// Position pooling against a direct computation: for each cell of a hand-made non-square grid
// (with padding rows and shuffled patch order), the mean of the k x k patches found by
// searching the position list; plus the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "backends/cpu/kernels/position_pool.h"
#include "base/error.h"

namespace staticlm::cpu {
namespace {

TEST(PositionPool, MatchesDirectCellMeansOnShuffledNonSquareGridWithPadding) {
  const std::int64_t k = 3, w = 9, h = 6, d = 5, pad = 7;
  // Patches of a 9 x 6 grid in a shuffled order, then 7 padding rows.
  std::vector<std::int64_t> order(static_cast<std::size_t>(w * h));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  std::mt19937 rng(7);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::int64_t> pos;
  for (std::int64_t i : order) {
    pos.push_back(i % w);
    pos.push_back(i / w);
  }
  for (int i = 0; i < pad; ++i) {
    pos.push_back(-1);
    pos.push_back(-1);
  }
  const std::int64_t n = w * h + pad;
  std::normal_distribution<float> nd;
  std::vector<float> x(static_cast<std::size_t>(n * d));
  for (float& v : x) v = nd(rng);  // padding rows hold junk: the pool must ignore it

  std::vector<float> out(static_cast<std::size_t>(8 * d), 0.0f), scratch;
  const std::int64_t cells = pool_by_positions(x.data(), pos.data(), n, d, k, out.data(), 8, scratch);
  ASSERT_EQ(cells, (w / k) * (h / k));  // 3 x 2 = 6
  for (std::int64_t cy = 0; cy < h / k; ++cy) {
    for (std::int64_t cx = 0; cx < w / k; ++cx) {
      const std::int64_t cell = cy * (w / k) + cx;  // row-major over the pooled grid
      for (std::int64_t j = 0; j < d; ++j) {
        double sum = 0;
        int found = 0;
        for (std::int64_t py = cy * k; py < cy * k + k; ++py) {
          for (std::int64_t px = cx * k; px < cx * k + k; ++px) {
            for (std::int64_t r = 0; r < n; ++r) {
              if (pos[r * 2] == px && pos[r * 2 + 1] == py) {
                sum += x[r * d + j];
                ++found;
              }
            }
          }
        }
        ASSERT_EQ(found, 9);
        EXPECT_NEAR(out[cell * d + j], sum / 9.0, 1e-5) << "cell " << cell << " dim " << j;
      }
    }
  }
}

TEST(PositionPool, RefusesTooManyCellsAndBadPositions) {
  const std::vector<std::int64_t> pos = {0, 0, 5, 0, 0, 5, 5, 5};  // 4 cells of a 6 x 6 grid, k = 3
  const std::vector<float> x(4, 1.0f);
  std::vector<float> out(4), scratch;
  try {
    pool_by_positions(x.data(), pos.data(), 4, 1, 3, out.data(), 3, scratch);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("more than 3 pooled cells"), std::string::npos) << e.what();
  }
  const std::vector<std::int64_t> bad = {0, 0, -2, 1};
  try {
    pool_by_positions(x.data(), bad.data(), 2, 1, 3, out.data(), 4, scratch);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("patch 1 has position (-2, 1)"), std::string::npos) << e.what();
  }
  try {
    pool_by_positions(x.data(), pos.data(), 4, 1, 0, out.data(), 4, scratch);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel size 0, expected a positive size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace staticlm::cpu
