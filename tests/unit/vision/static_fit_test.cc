// Fitting images to a static profile's patch grid: strict (reference) and fit (resize to grid).
#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "vision/image_processor.h"
#include "vision/resize.h"
#include "vision/static_fit.h"
#include "vision_fixtures.h"

namespace staticlm {
namespace {

using test::image_fixture;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(StaticFit, StrictAcceptsTheMatchingGrid) {
  RgbImage img(960, 540);  // 16:9 like 1080x1920 -> 576 x 1056 = 36 x 66 patches
  for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i * 31 % 251);
  const ProcessedImage p = process_image_for_grid(img, {36, 66}, FitMode::kStrict);
  const ProcessedImage ref = process_image(img);
  EXPECT_EQ(p.grid_height, 36);
  EXPECT_EQ(p.grid_width, 66);
  EXPECT_EQ(p.num_soft_tokens, 264);
  EXPECT_EQ(std::memcmp(p.pixel_values.data(), ref.pixel_values.data(), ref.pixel_values.nbytes()), 0);
}

TEST(StaticFit, StrictNamesBothGrids) {
  RgbImage img(640, 480);
  EXPECT_EQ(error_of([&] { process_image_for_grid(img, {36, 66}, FitMode::kStrict); }),
            "image 480 x 640 (H x W) gives a patch grid of 42 x 57 patches (672 x 912 pixels, H x W), but the static "
            "profile is compiled for 36 x 66 patches (576 x 1056 pixels, H x W); use fit mode to resize any image to the "
            "profile's grid");
}

TEST(StaticFit, FitResizesStraightToTheGrid) {
  // photo.jpg is 512 x 384; Pillow's resize of it to 1056 x 576 is a fixture, so fit mode's
  // pixels are checked against Pillow directly.
  const RgbImage photo = decode_image_file(image_fixture("photo.jpg"));
  const RgbImage pillow = decode_image_file(image_fixture("expected/photo_1056x576.png"));
  const ProcessedImage p = process_image_for_grid(photo, {36, 66}, FitMode::kFit);
  EXPECT_EQ(p.grid_height, 36);
  EXPECT_EQ(p.grid_width, 66);
  EXPECT_EQ(p.num_soft_tokens, 264);
  const auto px = p.pixel_values.as<float>();
  for (int y = 0; y < 576; y += 7)
    for (int x = 0; x < 1056; x += 5)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(px[((y / 16) * 66 + x / 16) * 768 + ((y % 16) * 16 + x % 16) * 3 + c],
                  rescale_pixel(pillow.pixels[(y * 1056 + x) * 3 + c]))
            << x << "," << y;
  EXPECT_EQ(p.position_ids.as<std::int64_t>()[2 * 2376], -1);  // first padding row
}

TEST(StaticFit, FitKeepsAnImageAlreadyAtTheGridSize) {
  RgbImage img(1056, 576);
  for (std::size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = static_cast<std::uint8_t>(i % 256);
  const ProcessedImage p = process_image_for_grid(img, {36, 66}, FitMode::kFit);
  EXPECT_EQ(p.pixel_values.as<float>()[1], rescale_pixel(1));
  EXPECT_EQ(std::memcmp(p.pixel_values.data(), patchify_image(img).pixel_values.data(), p.pixel_values.nbytes()), 0);
}

TEST(StaticFit, BadGridsAndModes) {
  RgbImage img(64, 64);
  EXPECT_EQ(error_of([&] { process_image_for_grid(img, {35, 66}, FitMode::kFit); }),
            "patch grid 35 x 66 must have positive sides that are multiples of 3");
  EXPECT_EQ(error_of([&] { process_image_for_grid(img, {60, 60}, FitMode::kFit); }),
            "patch grid 60 x 60 patches (960 x 960 pixels, H x W) has more than the 2520 patches of max_soft_tokens 280");
  EXPECT_EQ(error_of([] { parse_fit_mode("stretch"); }), "image fit mode 'stretch' is not known; expected 'strict' or 'fit'");
  EXPECT_EQ(parse_fit_mode("fit"), FitMode::kFit);
  EXPECT_EQ(parse_fit_mode("strict"), FitMode::kStrict);
  // A bigger budget admits the bigger grid.
  EXPECT_EQ(process_image_for_grid(img, {60, 60}, FitMode::kFit, 560).num_soft_tokens, 400);
}

}  // namespace
}  // namespace staticlm
