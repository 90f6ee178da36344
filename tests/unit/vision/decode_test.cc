// Decoding against Pillow: every fixture decodes to the RGB that Pillow's
// Image.open(f).convert("RGB") gives (tools/make_image_fixtures.py), and every bad file is a
// clear error.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "vision/image_decode.h"
#include "vision_fixtures.h"

namespace staticlm {
namespace {

using test::image_fixture;
using test::manifest_cases;

TEST(Decode, RgbPngEqualsRawBytes) {
  const auto cases = manifest_cases("decode_raw");
  ASSERT_EQ(cases.size(), 1u);
  const auto& c = cases[0];
  const RgbImage img = decode_image_file(image_fixture(c[0]));
  EXPECT_EQ(img.width, std::stoi(c[2]));
  EXPECT_EQ(img.height, std::stoi(c[3]));
  EXPECT_EQ(img.pixels, test::read_bytes(image_fixture(c[1])));
}

using Case = std::vector<std::string>;

// One test per fixture: FILE EXPECTED.png W H.
class DecodeMatchesPillow : public ::testing::TestWithParam<Case> {};

TEST_P(DecodeMatchesPillow, SamePixels) {
  const Case& c = GetParam();
  const RgbImage got = decode_image_file(image_fixture(c[0]));
  const RgbImage want = decode_image_file(image_fixture(c[1]));
  ASSERT_EQ(want.width, std::stoi(c[2]));
  ASSERT_EQ(want.height, std::stoi(c[3]));
  EXPECT_TRUE(test::same_pixels(got, want));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, DecodeMatchesPillow, ::testing::ValuesIn(manifest_cases("decode")),
                         [](const auto& info) { return test::case_name(info.param, 1); });

TEST(Decode, FixtureSetIsComplete) {
  EXPECT_GE(manifest_cases("decode").size(), 25u);  // PNG layouts, JPEG subsamplings, CMYK, grey, the photo
  EXPECT_GE(manifest_cases("bad").size(), 13u);
}

TEST(Decode, Grey16ClampsLikePillow) {
  // Row 0 of png_gray16.png holds 0, 20, ..., 320: Pillow clamps (260 -> 255), it does not shift.
  const RgbImage img = decode_image_file(image_fixture("png_gray16.png"));
  for (int x = 0; x < 17; ++x) {
    const int v = std::min(20 * x, 255);
    EXPECT_EQ(img.pixels[3 * x], v) << x;
    EXPECT_EQ(img.pixels[3 * x + 2], v) << x;
  }
}

ErrorKind kind_named(const std::string& s) {
  if (s == "invalid_file") return ErrorKind::kInvalidFile;
  if (s == "unsupported") return ErrorKind::kUnsupported;
  if (s == "out_of_range") return ErrorKind::kOutOfRange;
  ADD_FAILURE() << "unknown kind " << s;
  return ErrorKind::kInternal;
}

// One test per bad file: FILE KIND TEXT...; the message is one line, starts with the path and
// contains TEXT.
class BadImage : public ::testing::TestWithParam<Case> {};

TEST_P(BadImage, IsAClearError) {
  const Case& c = GetParam();
  std::string text;
  for (std::size_t i = 2; i < c.size(); ++i) text += (i > 2 ? " " : "") + c[i];
  const std::string path = image_fixture(c[0]);
  try {
    decode_image_file(path);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind_named(c[1])) << e.what();
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(text), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BadImage, ::testing::ValuesIn(manifest_cases("bad")),
                         [](const auto& info) { return test::case_name(info.param, 1); });

TEST(Decode, MessagesSayWhatWasExpected) {
  auto message = [](const std::string& name) {
    try {
      decode_image_file(image_fixture(name));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("bad_empty.png"), image_fixture("bad_empty.png") + ": the file is empty; expected a JPEG or PNG image");
  EXPECT_EQ(message("bad_format.gif"), image_fixture("bad_format.gif") + ": GIF images are not supported; expected JPEG or PNG");
  EXPECT_EQ(message("bad_zero_width.png"), image_fixture("bad_zero_width.png") + ": image has zero width or height (0 x 4)");
  EXPECT_EQ(message("bad_bomb.png"),
            image_fixture("bad_bomb.png") +
                ": image is 40000 x 40000 = 1600000000 pixels, over the limit of 178956970 (a decompression-bomb guard; "
                "raise it with --max-pixels if the image is trusted)");
  EXPECT_EQ(message("bad_truncated.jpg"),
            image_fixture("bad_truncated.jpg") + ": truncated JPEG (the data ends before the image is complete)");
}

TEST(Decode, MissingFileNamesThePath) {
  try {
    decode_image_file("/nonexistent/dir/cat.jpg");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/cat.jpg"), std::string::npos) << e.what();
  }
}

TEST(Decode, PixelLimitIsAnOption) {
  // png_rgb8.png is 23 x 17 = 391 pixels; jpg_444.jpg is 37 x 29 = 1073.
  DecodeOptions at{391}, below{390};
  EXPECT_EQ(decode_image_file(image_fixture("png_rgb8.png"), at).width, 23);
  EXPECT_THROW(decode_image_file(image_fixture("png_rgb8.png"), below), Error);
  try {
    decode_image_file(image_fixture("jpg_444.jpg"), DecodeOptions{1000});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("37 x 29 = 1073 pixels, over the limit of 1000"), std::string::npos) << e.what();
  }
}

TEST(Decode, TruncationAnywhereIsAnError) {
  for (const char* name : {"photo.jpg", "jpg_progressive.jpg", "png_interlaced.png", "odd97x61.png"}) {
    const auto bytes = test::read_bytes(image_fixture(name));
    for (int percent : {1, 5, 30, 60, 90}) {
      SCOPED_TRACE(std::string(name) + " cut at " + std::to_string(percent) + "%");
      const std::span<const std::uint8_t> cut(bytes.data(), bytes.size() * percent / 100);
      try {
        decode_image(cut, name);
        ADD_FAILURE() << "no error";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
      }
    }
  }
}

// A chunk before the image data that claims more bytes than the file holds (2 GB of tEXt in a
// file of 141 bytes) is refused from the chunk list, before libpng allocates anything for it.
TEST(Decode, ChunkLongerThanTheFileIsRefusedAtOnce) {
  const auto good = test::read_bytes(image_fixture("odd97x61.png"));
  for (const char* type : {"tEXt", "zTXt", "iCCP", "abcd"}) {
    std::vector<std::uint8_t> bytes(good.begin(), good.begin() + 33);  // signature + IHDR
    for (std::uint8_t b : {0x7f, 0xff, 0xff, 0xff}) bytes.push_back(b);
    bytes.insert(bytes.end(), type, type + 4);
    for (int k = 0; k < 100; ++k) bytes.push_back('x');
    try {
      decode_image(bytes, "bomb.png");
      ADD_FAILURE() << type << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
      EXPECT_EQ(std::string(e.what()), "bomb.png: truncated PNG (chunk " + std::string(type) + " declares 2147483647 bytes; 96 are left)");
    }
  }
}

// The progressive fixture with its last scan repeated: 80 more scans still decode (within the
// limit of 100), 200 more are refused by the scan limit.
std::vector<std::uint8_t> with_last_scan_repeated(const std::vector<std::uint8_t>& jpeg, int times) {
  // Segments: marker FF xx, then a 2-byte big-endian length; an SOS segment is followed by its
  // entropy-coded data up to the next marker that is not a stuffed FF00 or a restart FFD0-D7.
  std::size_t i = 2, last_scan = 0, last_scan_end = 0;
  while (i + 4 <= jpeg.size() && jpeg[i] == 0xFF && jpeg[i + 1] != 0xD9) {
    const std::size_t length = (std::size_t{jpeg[i + 2]} << 8) | jpeg[i + 3];
    std::size_t j = i + 2 + length;
    if (jpeg[i + 1] == 0xDA) {
      while (j + 1 < jpeg.size() && !(jpeg[j] == 0xFF && jpeg[j + 1] != 0 && (jpeg[j + 1] < 0xD0 || jpeg[j + 1] > 0xD7))) ++j;
      last_scan = i, last_scan_end = j;
    }
    i = j;
  }
  EXPECT_GT(last_scan_end, last_scan);
  std::vector<std::uint8_t> out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(last_scan_end));
  for (int k = 0; k < times; ++k) out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(last_scan), jpeg.begin() + static_cast<std::ptrdiff_t>(last_scan_end));
  out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(last_scan_end), jpeg.end());
  return out;
}

TEST(Decode, ProgressiveJpegScansAreLimited) {
  const auto good = test::read_bytes(image_fixture("jpg_progressive.jpg"));
  const RgbImage base = decode_image(good, "p.jpg");
  const RgbImage more = decode_image(with_last_scan_repeated(good, 80), "p.jpg");
  EXPECT_EQ(more.width, base.width);
  EXPECT_EQ(more.height, base.height);
  try {
    decode_image(with_last_scan_repeated(good, 200), "bomb.jpg");
    ADD_FAILURE() << "200 extra scans decoded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_EQ(std::string(e.what()), "bomb.jpg: a progressive JPEG of more than 100 scans (the limit; encoders write about 10)");
  }
}

TEST(Decode, CorruptedBytesNeverCrash) {
  // Flipped bytes must give either an image or an Error; the decoders must never crash or hang.
  std::mt19937 rng(7);
  int errors = 0, images = 0;
  for (const char* name : {"jpg_420.jpg", "jpg_progressive.jpg", "png_palette8.png", "png_interlaced.png", "png_rgb16.png"}) {
    const auto good = test::read_bytes(image_fixture(name));
    for (int trial = 0; trial < 60; ++trial) {
      auto bytes = good;
      for (int k = 0; k < 4; ++k) bytes[rng() % bytes.size()] ^= static_cast<std::uint8_t>(1 + rng() % 255);
      try {
        const RgbImage img = decode_image(bytes, name);
        EXPECT_EQ(img.pixels.size(), img.stride() * img.height);
        ++images;
      } catch (const Error&) {
        ++errors;
      }
    }
  }
  EXPECT_EQ(errors + images, 300);
  EXPECT_GT(errors, 0);  // PNG CRCs catch most flips
}

TEST(Decode, SniffsFormats) {
  auto sniff = [](const std::string& s) {
    return sniff_image_format({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(sniff("\xFF\xD8\xFF\xE0"), ImageFormat::kJpeg);
  EXPECT_EQ(sniff("\x89PNG\r\n\x1A\n"), ImageFormat::kPng);
  EXPECT_EQ(sniff("GIF89a"), ImageFormat::kGif);
  EXPECT_EQ(sniff(std::string("RIFF\0\0\0\0WEBP", 12)), ImageFormat::kWebp);
  EXPECT_EQ(sniff("\x89PNG\r\n"), ImageFormat::kUnknown);  // cut signature
  EXPECT_EQ(sniff("hello"), ImageFormat::kUnknown);
}

}  // namespace
}  // namespace staticlm
