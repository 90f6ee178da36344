// `staticlm preprocess`: the tensors it writes (checked against the Pillow fixtures) and its
// errors (exit code 2, one "error: ..." line, no output file left behind).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "tensor/safetensors.h"
#include "vision_fixtures.h"

namespace staticlm {
namespace {

using test::image_fixture;
using test::run_staticlm;

TEST(PreprocessCli, WritesTheThreeTensors) {
  test::TempDir dir;
  const std::string out = dir.file("photo.safetensors");
  const auto r = run_staticlm("preprocess --image " + image_fixture("photo.jpg") + " --max-soft-tokens 70 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("63 soft tokens"), std::string::npos) << r.out;
  auto f = SafetensorsFile::open(out);
  EXPECT_EQ(f->names().size(), 3u);
  const TensorView pv = f->get("pixel_values"), pos = f->get("image_position_ids"), n = f->get("num_soft_tokens");
  EXPECT_EQ(pv.dtype, DType::kF32);
  EXPECT_EQ(pv.shape, (Shape{1, 630, 768}));
  EXPECT_EQ(pos.dtype, DType::kI64);
  EXPECT_EQ(pos.shape, (Shape{1, 630, 2}));
  EXPECT_EQ(n.dtype, DType::kI64);
  EXPECT_EQ(n.shape, (Shape{1}));
  EXPECT_EQ(n.as<std::int64_t>()[0], 63);

  // Rows against the fixture script's Pillow pipeline.
  const auto cases = test::manifest_cases("rows");
  const auto& c = cases.at(0);
  ASSERT_EQ(c[1], "70");
  const auto want = test::read_bytes(image_fixture(c[2]));
  const auto got = pv.as<float>();
  for (std::size_t r = 3; r < c.size(); ++r) {
    const std::size_t row = std::stoul(c[r]);
    EXPECT_EQ(std::memcmp(&got[row * 768], &want[(r - 3) * 768 * 4], 768 * 4), 0) << "row " << row;
  }
  // 21 x 27 patches, row-major, (x, y); then padding.
  const auto p = pos.as<std::int64_t>();
  EXPECT_EQ(p[2 * 26], 26);
  EXPECT_EQ(p[2 * 26 + 1], 0);
  EXPECT_EQ(p[2 * 27], 0);
  EXPECT_EQ(p[2 * 27 + 1], 1);
  EXPECT_EQ(p[2 * 566], 26);
  EXPECT_EQ(p[2 * 566 + 1], 20);
  EXPECT_EQ(p[2 * 567], -1);
  EXPECT_EQ(p[2 * 629 + 1], -1);
  EXPECT_EQ(got[567 * 768], 0.0f);
}

TEST(PreprocessCli, DefaultBudgetIs280) {
  test::TempDir dir;
  const std::string out = dir.file("o.safetensors");
  const auto r = run_staticlm("preprocess --image " + image_fixture("photo.jpg") + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = SafetensorsFile::open(out);
  EXPECT_EQ(f->get("pixel_values").shape, (Shape{1, 2520, 768}));
  EXPECT_EQ(f->get("image_position_ids").shape, (Shape{1, 2520, 2}));
  EXPECT_EQ(f->get("num_soft_tokens").as<std::int64_t>()[0], 266);
}

TEST(PreprocessCli, GridFitAndStrict) {
  test::TempDir dir;
  const std::string out = dir.file("o.safetensors");
  const std::string photo = image_fixture("photo.jpg");
  auto r = run_staticlm("preprocess --image " + photo + " --grid 36x66 --fit-mode fit --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SafetensorsFile::open(out)->get("num_soft_tokens").as<std::int64_t>()[0], 264);
  std::filesystem::remove(out);
  r = run_staticlm("preprocess --image " + photo + " --grid 36x66 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "error: image 384 x 512 (H x W) gives a patch grid of 42 x 57 patches (672 x 912 pixels, H x W), but the static "
            "profile is compiled for 36 x 66 patches (576 x 1056 pixels, H x W); use fit mode to resize any image to the "
            "profile's grid\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(PreprocessCli, BadInputsAreOneLineErrors) {
  test::TempDir dir;
  const std::string out = dir.file("o.safetensors");
  const std::string photo = image_fixture("photo.jpg");
  struct Case {
    std::string args, err;
  };
  const std::vector<Case> cases = {
      {"--image " + image_fixture("bad_truncated.jpg"),
       "error: " + image_fixture("bad_truncated.jpg") + ": truncated JPEG (the data ends before the image is complete)\n"},
      {"--image " + image_fixture("bad_format.gif"),
       "error: " + image_fixture("bad_format.gif") + ": GIF images are not supported; expected JPEG or PNG\n"},
      {"--image " + photo + " --max-soft-tokens 100",
       "error: max_soft_tokens 100 is not supported; expected one of 70, 140, 280, 560, 1120\n"},
      {"--image " + photo + " --max-pixels 1000",
       "error: " + photo + ": image is 512 x 384 = 196608 pixels, over the limit of 1000 (a decompression-bomb guard; "
                           "raise it with --max-pixels if the image is trusted)\n"},
      {"--image " + photo + " --max-pixels -5", "error: --max-pixels: -5 is not a positive pixel count\n"},
      {"--image " + photo + " --grid 36by66", "error: --grid: \"36by66\" is not a patch grid; expected HxW in patches, e.g. 36x66\n"},
      {"--image " + photo + " --grid 36x66 --fit-mode squash",
       "error: image fit mode 'squash' is not known; expected 'strict' or 'fit'\n"},
      {"--image " + dir.file("missing.jpg"), "error: " + dir.file("missing.jpg") + ": cannot open (No such file or directory)\n"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const auto r = run_staticlm("preprocess " + c.args + " --out " + out);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, c.err);
    EXPECT_FALSE(std::filesystem::exists(out));
  }
  const auto r = run_staticlm("preprocess --out " + out);  // no --image
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--image"), std::string::npos) << r.err;
}

TEST(PreprocessCli, UnwritableOutputIsAnError) {
  const auto r = run_staticlm("preprocess --image " + image_fixture("png_rgb8.png") + " --out /nonexistent/dir/o.safetensors");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/dir/o.safetensors"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace staticlm
