// Gemma4ClippableLinear: the input is clamped before the matmul and the output after it,
// checked on a hand-computed case where both bounds bite.
#include <gtest/gtest.h>

#include <vector>

#include "backends/cpu/vision_tower.h"

namespace staticlm::cpu {
namespace {

TEST(ClippedLinear, ClampsInputThenOutput) {
  // W [3, 2] = [[1, 0], [0, 1], [1, 1]]; x = (5, -0.5); input bounds [-1, 2] -> (2, -0.5);
  // W x = (2, -0.5, 1.5); output bounds [-0.25, 1.75] -> (1.75, -0.25, 1.5).
  const std::vector<float> w = {1, 0, 0, 1, 1, 1};
  ClippedLinear c;
  c.w = {DType::kF32, 3, 2, w.data()};
  c.input_min = -1.0f;
  c.input_max = 2.0f;
  c.output_min = -0.25f;
  c.output_max = 1.75f;
  const std::vector<float> x = {5.0f, -0.5f};
  std::vector<float> y(3), scratch;
  clipped_linear(c, x.data(), 1, y.data(), scratch, nullptr);
  EXPECT_FLOAT_EQ(y[0], 1.75f);
  EXPECT_FLOAT_EQ(y[1], -0.25f);
  EXPECT_FLOAT_EQ(y[2], 1.5f);
  // Clamping only the output would give (1.75, -0.25, 1.75): the input clamp bites too.
}

TEST(ClippedLinear, InfiniteBoundsLeaveTheMatmul) {
  const std::vector<float> w = {2, -3};
  ClippedLinear c;
  c.w = {DType::kF32, 1, 2, w.data()};
  const std::vector<float> x = {1e6f, 1e6f};
  std::vector<float> y(1), scratch;
  clipped_linear(c, x.data(), 1, y.data(), scratch, nullptr);
  EXPECT_FLOAT_EQ(y[0], -1e6f);
}

}  // namespace
}  // namespace staticlm::cpu
