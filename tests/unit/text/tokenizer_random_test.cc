// Random input on the real vocabulary: any valid UTF-8 encodes and decodes back to itself (when
// it holds no U+2581, which the normalizer and decoder map to and from the space), and any byte
// string either encodes or is refused as invalid UTF-8, naming the offset of the first bad byte
// that a second validator (the standard's byte ranges, written out below) finds.
#include <gtest/gtest.h>

#include <random>

#include "base/error.h"
#include "text/utf8.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

TEST(TokenizerRandom, ValidTextRoundTrips) {
  STATICLM_REQUIRE_GEMMA3(tok);
  std::mt19937 rng(7);
  // Code points from ranges that stress different paths: ASCII, Latin, combining marks, CJK,
  // private use (byte fallback), emoji, and the characters of special tokens.
  const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x0, 0x7F}, {0xA0, 0x24F}, {0x300, 0x36F}, {0x4E00, 0x4E80}, {0xE000, 0xE010}, {0x1F600, 0x1F64F}, {0xF0000, 0xF0004}};
  const std::vector<std::string> specials = {"<bos>", "<eos>", "<start_of_turn>", "\n\n", "  ", "<unused3>", "<0x41>"};
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      if (rng() % 10 == 0) {
        text += specials[rng() % specials.size()];
        continue;
      }
      const auto& [lo, hi] = ranges[rng() % ranges.size()];
      utf8_append(text, lo + static_cast<char32_t>(rng() % (hi - lo + 1)));
    }
    const std::vector<int> ids = tok->encode(text);
    EXPECT_EQ(tok->decode(ids), text) << nlohmann::json(text).dump();
  }
}

// The first offset where `s` breaks the UTF-8 byte-range table (Unicode 15, Table 3-7).
std::size_t first_bad_byte(const std::string& s) {
  auto in = [](unsigned char c, int lo, int hi) { return c >= lo && c <= hi; };
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](std::size_t k) { return i + k < s.size() ? static_cast<int>(static_cast<unsigned char>(s[i + k])) : 0x100; };
    const int c0 = static_cast<unsigned char>(s[i]);
    int len = 0;
    if (c0 <= 0x7F) len = 1;
    else if (in(c0, 0xC2, 0xDF) && i + 1 < s.size() && in(b(1), 0x80, 0xBF)) len = 2;
    else if (c0 == 0xE0 && i + 2 < s.size() && in(b(1), 0xA0, 0xBF) && in(b(2), 0x80, 0xBF)) len = 3;
    else if ((in(c0, 0xE1, 0xEC) || in(c0, 0xEE, 0xEF)) && i + 2 < s.size() && in(b(1), 0x80, 0xBF) && in(b(2), 0x80, 0xBF)) len = 3;
    else if (c0 == 0xED && i + 2 < s.size() && in(b(1), 0x80, 0x9F) && in(b(2), 0x80, 0xBF)) len = 3;
    else if (c0 == 0xF0 && i + 3 < s.size() && in(b(1), 0x90, 0xBF) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF)) len = 4;
    else if (in(c0, 0xF1, 0xF3) && i + 3 < s.size() && in(b(1), 0x80, 0xBF) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF)) len = 4;
    else if (c0 == 0xF4 && i + 3 < s.size() && in(b(1), 0x80, 0x8F) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF)) len = 4;
    else return i;
    i += len;
  }
  return std::string::npos;
}

TEST(TokenizerRandom, ArbitraryBytesEncodeOrAreRefused) {
  STATICLM_REQUIRE_GEMMA3(tok);
  std::mt19937 rng(11);
  int refused = 0, encoded = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(rng() % 12, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 0x60 + rng() % 8);
    const std::size_t bad = first_bad_byte(bytes);
    try {
      const std::vector<int> ids = tok->encode(bytes);
      EXPECT_EQ(bad, std::string::npos);
      EXPECT_EQ(tok->decode(ids), bytes);
      ++encoded;
    } catch (const Error& e) {
      ASSERT_NE(bad, std::string::npos) << nlohmann::json::binary({bytes.begin(), bytes.end()}).dump();
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      EXPECT_EQ(std::string(e.what()), "text to encode is not valid UTF-8 (bad byte at offset " + std::to_string(bad) + ")");
      ++refused;
    }
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(encoded, 100);
}

}  // namespace
}  // namespace staticlm
