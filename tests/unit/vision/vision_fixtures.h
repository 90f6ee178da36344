// Test helpers for tests/fixtures/images (made by tools/make_image_fixtures.py with Pillow):
// the manifest's cases and small readers. Header-only; shared by the vision test files.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "vision/image_decode.h"
#include "vision/rgb_image.h"

namespace staticlm::test {

inline std::string image_fixture(const std::string& name) { return fixture("images/" + name); }

// Lines of manifest.txt whose first word is `kind`, split into words (the kind dropped).
inline std::vector<std::vector<std::string>> manifest_cases(const std::string& kind) {
  std::ifstream in(image_fixture("manifest.txt"));
  std::vector<std::vector<std::string>> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string first, w;
    if (!(words >> first) || first != kind) continue;
    std::vector<std::string> c;
    while (words >> w) c.push_back(w);
    cases.push_back(c);
  }
  return cases;
}

// A gtest-safe name for a case: its words joined by '_', other characters dropped.
inline std::string case_name(const std::vector<std::string>& words, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n && i < words.size(); ++i) {
    if (i) out += '_';
    for (char ch : words[i])
      if (std::isalnum(static_cast<unsigned char>(ch))) out += ch;
  }
  return out;
}

inline std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Compares two images; on a difference, reports the size mismatch or the first differing value
// and how many values differ.
inline ::testing::AssertionResult same_pixels(const RgbImage& got, const RgbImage& want) {
  if (got.width != want.width || got.height != want.height)
    return ::testing::AssertionFailure() << "size " << got.width << "x" << got.height << ", expected " << want.width << "x"
                                         << want.height;
  std::size_t diffs = 0, first = 0;
  for (std::size_t i = 0; i < want.pixels.size(); ++i)
    if (got.pixels[i] != want.pixels[i] && diffs++ == 0) first = i;
  if (diffs == 0) return ::testing::AssertionSuccess();
  const std::size_t px = first / 3;
  return ::testing::AssertionFailure() << diffs << " of " << want.pixels.size() << " values differ; first at x=" << px % want.width
                                       << " y=" << px / want.width << " c=" << first % 3 << ": " << int(got.pixels[first])
                                       << " vs " << int(want.pixels[first]);
}

}  // namespace staticlm::test
