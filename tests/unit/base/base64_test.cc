#include "base/base64.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace staticlm {
namespace {

std::string decoded(std::string_view text) {
  const auto b = base64_decode(text, "t");
  return {b.begin(), b.end()};
}

// The test vectors of RFC 4648 section 10.
TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(decoded(""), "");
  EXPECT_EQ(decoded("Zg=="), "f");
  EXPECT_EQ(decoded("Zm8="), "fo");
  EXPECT_EQ(decoded("Zm9v"), "foo");
  EXPECT_EQ(decoded("Zm9vYg=="), "foob");
  EXPECT_EQ(decoded("Zm9vYmE="), "fooba");
  EXPECT_EQ(decoded("Zm9vYmFy"), "foobar");
}

// Every byte value, as Python's base64.b64encode(bytes(range(256))) writes it.
TEST(Base64, EveryByteValue) {
  const auto b = base64_decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==", "t");
  ASSERT_EQ(b.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(b[static_cast<std::size_t>(i)], i);
}

TEST(Base64, UnpaddedAndLineBreaks) {
  EXPECT_EQ(decoded("Zm9vYg"), "foob");
  EXPECT_EQ(decoded("Zm9vYmE"), "fooba");
  EXPECT_EQ(decoded("Zm9v\r\nYmFy\n"), "foobar");
}

TEST(Base64, RefusesWhatIsNotBase64) {
  for (const char* bad : {"Zm9v!", "Zg==Zg==", "Z", "Zm9vY", "Zg=", "Zg===", "=Zg", "Zm-v"}) {
    try {
      base64_decode(bad, "image_url");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << bad;
      EXPECT_EQ(std::string(e.what()).rfind("image_url: not base64", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace staticlm
