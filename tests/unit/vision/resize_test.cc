// Bicubic resize: bit-exact with Pillow's Image.resize(BICUBIC) on the fixture set (noise,
// gradients, hard edges, 1x1 and 3x7, 10x2000 and 2000x10, odd sizes, same-size, a photo), plus
// closed forms for the kernel weights and for constant images.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "vision/resize.h"
#include "vision_fixtures.h"

namespace staticlm {
namespace {

using test::image_fixture;

// One test per case: INPUT W H EXPECTED.png.
class ResizeMatchesPillow : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(ResizeMatchesPillow, BitExact) {
  const auto& c = GetParam();
  const RgbImage in = decode_image_file(image_fixture(c[0]));
  const RgbImage want = decode_image_file(image_fixture(c[3]));
  EXPECT_TRUE(test::same_pixels(resize_bicubic(in, std::stoi(c[1]), std::stoi(c[2])), want));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ResizeMatchesPillow, ::testing::ValuesIn(test::manifest_cases("resize")),
                         [](const auto& info) { return test::case_name(info.param, 3); });

TEST(Resize, FixtureSetIsComplete) { EXPECT_GE(test::manifest_cases("resize").size(), 30u); }

TEST(Resize, UpscaleByTwoUsesKeysWeights) {
  // Output 4 of 4 -> 8 has its centre at input coordinate 2.25, so inputs 0..3 sit at distances
  // 1.75, 0.75, 0.25, 1.25. Keys' cubic (a = -0.5) there: -3/128, 29/128, 111/128, -9/128, which
  // sum to exactly 1; in 22-bit fixed point they are exact.
  const ResampleTaps taps = bicubic_taps(4, 8);
  EXPECT_EQ(taps.ksize, 5);  // support 2 -> 2 * 2 + 1
  ASSERT_EQ(taps.first[4], 0);
  ASSERT_EQ(taps.count[4], 4);
  const std::int32_t* w = &taps.weights[4 * 5];
  EXPECT_EQ(w[0], -3 * (1 << 15));
  EXPECT_EQ(w[1], 29 * (1 << 15));
  EXPECT_EQ(w[2], 111 * (1 << 15));
  EXPECT_EQ(w[3], -9 * (1 << 15));
}

TEST(Resize, DownscaleStretchesTheKernel) {
  // Shrinking 40 -> 10 (factor 4): support 2 * 4 = 8 input pixels each side, so ksize 17 and
  // interior outputs read 16 inputs whose weights sum to 1 (within rounding of 16 terms).
  const ResampleTaps taps = bicubic_taps(40, 10);
  EXPECT_EQ(taps.ksize, 17);
  for (int i = 2; i < 8; ++i) {
    EXPECT_EQ(taps.count[i], 16) << i;
    EXPECT_EQ(taps.first[i], 4 * i - 6) << i;  // centre 4i + 2, window [centre - 8, centre + 8)
    std::int64_t sum = 0;
    for (int t = 0; t < taps.count[i]; ++t) sum += taps.weights[i * 17 + t];
    EXPECT_LE(std::llabs(sum - (1 << 22)), 16) << i;
  }
}

TEST(Resize, ConstantImageStaysConstant) {
  // Normalised weights keep a constant: sum(c * w) = c * 2^22 (+- rounding far below 0.5 * 2^22).
  for (const auto& [w, h, ow, oh] : std::vector<std::array<int, 4>>{{7, 5, 48, 96}, {300, 20, 13, 7}, {1, 1, 9, 4}}) {
    RgbImage img(w, h);
    for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i % 3 == 0 ? 200 : i % 3 == 1 ? 3 : 255);
    const RgbImage out = resize_bicubic(img, ow, oh);
    ASSERT_EQ(out.width, ow);
    ASSERT_EQ(out.height, oh);
    for (std::size_t i = 0; i < out.pixels.size(); ++i)
      ASSERT_EQ(out.pixels[i], i % 3 == 0 ? 200 : i % 3 == 1 ? 3 : 255) << i;
  }
}

TEST(Resize, SameSizeIsACopy) {
  RgbImage img(5, 4);
  std::mt19937 rng(3);
  for (auto& v : img.pixels) v = static_cast<std::uint8_t>(rng());
  EXPECT_EQ(resize_bicubic(img, 5, 4).pixels, img.pixels);
}

TEST(Resize, OneAxisLeavesTheOtherAlone) {
  // Changing only the width never mixes rows: each output row depends on its input row alone.
  RgbImage img(30, 3);
  for (int x = 0; x < 30; ++x)
    for (int c = 0; c < 3; ++c) {
      img.row(0)[3 * x + c] = static_cast<std::uint8_t>(x * 8);
      img.row(1)[3 * x + c] = 77;
      img.row(2)[3 * x + c] = static_cast<std::uint8_t>(255 - x * 8);
    }
  const RgbImage out = resize_bicubic(img, 11, 3);
  for (int x = 0; x < 11 * 3; ++x) EXPECT_EQ(out.row(1)[x], 77) << x;
}

TEST(Resize, BadSizesAreErrors) {
  RgbImage img(4, 4);
  try {
    resize_bicubic(img, 0, 5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(), "resize_bicubic: output size must be positive (got 0 x 5)");
  }
  EXPECT_THROW(resize_bicubic(RgbImage{}, 3, 3), Error);
}

}  // namespace
}  // namespace staticlm
