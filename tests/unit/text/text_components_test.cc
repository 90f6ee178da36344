// The building blocks, each checked against a closed form or a second computation: UTF-8
// validation and coding, regex match iteration (the onig crate's rules), literal search against
// the regex engine, NFC/NFD/NFKC/NFKD against utf8proc's own whole-string functions.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdlib>

#include "text/chat_format.h"
#include "text/normalizer.h"
#include "text/regex.h"
#include "text/unicode_normalize.h"
#include "text/utf8.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

using Matches = std::vector<std::pair<std::size_t, std::size_t>>;

TEST(Utf8, Validation) {
  EXPECT_EQ(utf8_first_invalid(""), std::string_view::npos);
  EXPECT_EQ(utf8_first_invalid("plain ascii"), std::string_view::npos);
  EXPECT_EQ(utf8_first_invalid("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), std::string_view::npos);  // é € 😀
  EXPECT_EQ(utf8_first_invalid("a\x80"), 1u);                   // stray continuation byte
  EXPECT_EQ(utf8_first_invalid("ab\xC0\xAF"), 2u);              // overlong '/'
  EXPECT_EQ(utf8_first_invalid("\xE0\x80\xAF"), 0u);            // overlong 3-byte
  EXPECT_EQ(utf8_first_invalid("x\xED\xA0\x80"), 1u);           // surrogate U+D800
  EXPECT_EQ(utf8_first_invalid("\xF4\x90\x80\x80"), 0u);        // past U+10FFFF
  EXPECT_EQ(utf8_first_invalid("ok\xE2\x82"), 2u);              // truncated
  EXPECT_EQ(utf8_first_invalid("\xFF"), 0u);
}

TEST(Utf8, EncodeDecodeEveryScalarValue) {
  std::string all;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    utf8_append(all, c);
  }
  ASSERT_TRUE(is_valid_utf8(all));
  // Length by the closed form: 128 one-byte, 1920 two-byte, 65536-2048-128-1920 three-byte, 2^20 four-byte.
  EXPECT_EQ(all.size(), 128u + 1920u * 2 + 61440u * 3 + 1048576u * 4);
  std::size_t pos = 0;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    ASSERT_EQ(utf8_decode(all, pos), c);
  }
  EXPECT_EQ(pos, all.size());
  EXPECT_EQ(utf8_length(all), 0x110000u - 0x800u);
}

Matches find(const Regex& r, std::string_view text) {
  Matches m;
  r.find_all(text, m);
  return m;
}

TEST(Regex, MatchIterationFollowsTheOnigCrate) {
  // Cases from the `tokenizers` pattern tests.
  const auto ws = Regex::compile("\\s+", "test");
  EXPECT_EQ(find(*ws, "a   b"), (Matches{{1, 4}}));
  EXPECT_EQ(find(*ws, "   a   b   "), (Matches{{0, 3}, {4, 7}, {8, 11}}));
  EXPECT_EQ(find(*ws, "𝔾𝕠𝕠𝕕 𝕞𝕠𝕣𝕟𝕚𝕟𝕘"), (Matches{{16, 17}}));
  // Empty matches: one at each character boundary not right after a match.
  const auto star = Regex::compile("x*", "test");
  EXPECT_EQ(find(*star, "ab"), (Matches{{0, 0}, {1, 1}, {2, 2}}));
  EXPECT_EQ(find(*star, "xxa"), (Matches{{0, 2}, {3, 3}}));
  EXPECT_EQ(find(*star, "é"), (Matches{{0, 0}, {2, 2}}));
  EXPECT_EQ(find(*Regex::literal(""), "é!"), (Matches{{0, 0}, {2, 2}, {3, 3}}));
  EXPECT_EQ(find(*Regex::compile("", "t"), "é!"), (Matches{{0, 0}, {2, 2}, {3, 3}}));
}

TEST(Regex, LiteralSearchEqualsTheEscapedRegex) {
  // Regex::literal searches without Oniguruma; upstream compiles the escaped literal instead.
  const std::vector<std::string> texts = test::corpus();
  for (const std::string lit : {" ", "\xE2\x96\x81", "--", "a.b", "(x|y)*", "\\", "[^]", "#&-~", "<bos>"}) {
    std::string escaped;
    for (char c : lit) {
      if (std::string_view("\\.+*?()|[]{}^$#&-~").find(c) != std::string_view::npos) escaped += '\\';
      escaped += c;
    }
    const auto re = Regex::compile(escaped, "test");
    const auto plain = Regex::literal(lit);
    for (const std::string& t : texts) {
      const std::string text = t + lit + t.substr(0, t.size() / 2) + lit + lit;
      ASSERT_EQ(find(*plain, text), find(*re, text)) << lit;
    }
  }
}

TEST(Regex, WordAndSpaceClasses) {
  EXPECT_TRUE(is_word_char(U'a'));
  EXPECT_TRUE(is_word_char(U'_'));
  EXPECT_TRUE(is_word_char(U'7'));
  EXPECT_TRUE(is_word_char(U'é'));
  EXPECT_TRUE(is_word_char(U'日'));
  EXPECT_TRUE(is_word_char(0x0301));  // a combining mark
  EXPECT_FALSE(is_word_char(U'-'));
  EXPECT_FALSE(is_word_char(U' '));
  EXPECT_FALSE(is_word_char(0x1F600));
  EXPECT_TRUE(is_white_space(0x3000));
  EXPECT_TRUE(is_white_space(0x85));
  EXPECT_FALSE(is_white_space(0x200B));  // zero width space is not White_Space
}

std::string utf8proc_form(const std::string& s, UnicodeForm form) {
  const auto* in = reinterpret_cast<const utf8proc_uint8_t*>(s.c_str());
  utf8proc_uint8_t* out = form == UnicodeForm::kNfc ? utf8proc_NFC(in) : form == UnicodeForm::kNfd ? utf8proc_NFD(in)
                          : form == UnicodeForm::kNfkc ? utf8proc_NFKC(in) : utf8proc_NFKD(in);
  std::string r(reinterpret_cast<char*>(out));
  std::free(out);
  return r;
}

TEST(UnicodeNormalize, TextEqualsUtf8procWholeStringForms) {
  std::vector<std::string> texts = test::corpus();
  texts.push_back("\xEA\xB0\x80\xE1\x86\xA8 \xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8");  // Hangul LV+T and L+V+T
  texts.push_back("a\xCC\x81\xCC\xA3 a\xCC\xA3\xCC\x81 \xE1\xBA\xA1\xCC\x81");        // reordering cases
  for (const std::string& t : texts) {
    if (t.find('\0') != std::string::npos) continue;  // utf8proc's helpers stop at NUL
    for (UnicodeForm f : {UnicodeForm::kNfc, UnicodeForm::kNfd, UnicodeForm::kNfkc, UnicodeForm::kNfkd}) {
      NormalizedText n = NormalizedText::original(t, 0);
      unicode_normalize(n, f);
      ASSERT_EQ(n.text, utf8proc_form(t, f)) << nlohmann::json(t).dump();
      ASSERT_EQ(n.origin.size(), n.text.size());
    }
  }
}

TEST(UnicodeNormalize, OriginsFollowTheCharacters) {
  // "e" + U+0301 + "x" -> "é" (from offset 0) + "x" (offset 3).
  NormalizedText a = NormalizedText::original("e\xCC\x81x", 10);
  unicode_normalize(a, UnicodeForm::kNfc);
  EXPECT_EQ(a.text, "\xC3\xA9x");
  EXPECT_EQ(a.origin, (std::vector<std::uint32_t>{10, 10, 13}));
  // "ﬁ" -> "fi": both letters come from the ligature at offset 1.
  NormalizedText b = NormalizedText::original("-\xEF\xAC\x81", 0);
  unicode_normalize(b, UnicodeForm::kNfkc);
  EXPECT_EQ(b.text, "-fi");
  EXPECT_EQ(b.origin, (std::vector<std::uint32_t>{0, 1, 1}));
}

TEST(Normalizer, ReplaceGivesNewBytesTheLastReplacedOrigin) {
  NormalizedText t = NormalizedText::original("a  b", 0);
  replace_matches(t, *Regex::compile(" +", "t"), "__");
  EXPECT_EQ(t.text, "a__b");
  EXPECT_EQ(t.origin, (std::vector<std::uint32_t>{0, 2, 2, 3}));
  prepend_text(t, "\xE2\x96\x81");
  EXPECT_EQ(t.text, "\xE2\x96\x81" "a__b");
  EXPECT_EQ(t.origin[0], 0u);
}

TEST(PythonStrip, MatchesStrStrip) {
  EXPECT_EQ(python_strip("  hi there \n"), "hi there");
  EXPECT_EQ(python_strip("\x1c\xC2\xA0x\xE3\x80\x80"), "x");  // U+001C, NBSP and ideographic space count
  EXPECT_EQ(python_strip("\xE2\x80\x8Bx"), "\xE2\x80\x8Bx");    // U+200B does not
  EXPECT_EQ(python_strip(" \t\r\n"), "");
}

}  // namespace
}  // namespace staticlm
