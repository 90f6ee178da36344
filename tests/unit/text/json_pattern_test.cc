#include "text/json_pattern.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "base/error.h"
#include "text/json_matcher.h"
#include "text/json_schema.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

std::wstring wide(const std::string& utf8) {
  std::wstring w;
  for (std::size_t i = 0; i < utf8.size();) w.push_back(static_cast<wchar_t>(utf8_decode(utf8, i)));
  return w;
}

// Every string of up to `max_len` characters over `alphabet` (UTF-8, one character each).
std::vector<std::string> strings_over(const std::vector<std::string>& alphabet, int max_len) {
  std::vector<std::string> out = {""}, layer = {""};
  for (int len = 1; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : layer) {
      for (const std::string& c : alphabet) next.push_back(s + c);
    }
    out.insert(out.end(), next.begin(), next.end());
    layer = std::move(next);
  }
  return out;
}

// The automaton against another implementation of ECMAScript regular expressions (libstdc++'s
// std::wregex, regex_search: JSON Schema's "anywhere unless anchored"), on every short string
// over an alphabet that meets the pattern's classes and misses them.
TEST(JsonPattern, AgreesWithStdRegexSearch) {
  struct Case {
    const char* pattern;
    std::vector<std::string> alphabet;
    int max_len;
    const char* reference = nullptr;  // for std::regex, which has no named groups
  };
  const std::vector<Case> cases = {
      {"^[A-Z]{3}-\\d{2}$", {"A", "Z", "a", "-", "1", "9"}, 6},
      {"^\\d{3}-\\d{2}$", {"0", "5", "-", "x"}, 7},
      {"ab|cd", {"a", "b", "c", "d"}, 5},
      {"^(ab|cd)+$", {"a", "b", "c", "d"}, 6},
      {"a.c", {"a", "c", "\n", "\r", "x"}, 4},
      {"^a.c$", {"a", "c", "\n", "\xC3\xA9"}, 4},
      {"^[^a-c]*$", {"a", "c", "d", "-", "\xE2\x82\xAC"}, 4},
      {"^(\\([0-9]{2}\\))?[0-9]{2}$", {"(", ")", "1", "x"}, 6},
      {"x{2,}", {"x", "y"}, 5},
      {"^x{2,3}$", {"x", "y"}, 5},
      {"^(?:a|b)*c?$", {"a", "b", "c"}, 5},
      {"^\\w+@\\w+\\.[a-z]{2,}$", {"a", "_", "@", ".", "Z", " "}, 7},
      {"[\\s]+x", {" ", "\t", "\n", "x", "y"}, 4},
      {"^\\S+$", {" ", "a", "\t", "\xC3\xA9"}, 4},
      {"^$", {"a"}, 2},
      {"", {"a", "b"}, 3},
      {"^a*?b+?$", {"a", "b"}, 5},
      {"^[\\d\\-.]+$", {"1", "-", ".", "a"}, 4},
      {"^\xC3\xA9+\xE2\x82\xAC?$", {"\xC3\xA9", "\xE2\x82\xAC", "e"}, 4},
      {"^\\x41\\u0042$", {"A", "B", "a"}, 3},
      {"^a|b$", {"a", "b", "c"}, 4},
      {"^[a-]+$", {"a", "-", "b"}, 4},
      {"\\.", {".", "a"}, 3},
      {"^(a{2}){2}$", {"a", "b"}, 5},
      {"^(a|)+b$", {"a", "b"}, 4},
      {"^[\\w-]{2,3}$", {"a", "-", "!"}, 4},
      {"^(?<year>\\d{2})-(?<m>\\d)$", {"1", "-"}, 5, "^(\\d{2})-(\\d)$"},
      // Not a repeat: the characters themselves (ECMA-262 Annex B; std::regex wants them escaped).
      {"^a{,2}$", {"a", "{", ",", "2", "}"}, 6, "^a\\{,2\\}$"},
      {"^[^\\d\\s]?$", {"1", " ", "a", "\xC3\xA9"}, 2},
      {"^\\W\\D$", {"a", "1", "!", " "}, 3},
  };
  for (const Case& c : cases) {
    const JsonPattern p = JsonPattern::compile(c.pattern, "pattern");
    const std::wregex reference(wide(c.reference ? c.reference : c.pattern), std::regex::ECMAScript);
    int matched = 0;
    for (const std::string& s : strings_over(c.alphabet, c.max_len)) {
      const bool expected = std::regex_search(wide(s), reference);
      ASSERT_EQ(p.matches(s), expected) << "pattern '" << c.pattern << "' on '" << s << "'";
      matched += expected;
    }
    EXPECT_GT(matched, 0) << c.pattern;  // each case tells matches from misses
  }
}

// A step that leaves no way to match says so at once (what prunes tokens while generating).
TEST(JsonPattern, DeadPrefixIsRefusedAtItsCharacter) {
  const JsonPattern p = JsonPattern::compile("^[A-Z]{2}\\d$", "pattern");
  JsonPattern::State s = JsonPattern::start();
  EXPECT_FALSE(p.accepts(s));
  EXPECT_TRUE(p.step(s, 'A'));
  EXPECT_FALSE(p.step(s, '1'));
  s = JsonPattern::start();
  for (char32_t c : {U'Q', U'Z', U'7'}) ASSERT_TRUE(p.step(s, c));
  EXPECT_TRUE(p.accepts(s));
  EXPECT_FALSE(p.step(s, '7'));
  // Unanchored: nothing is ever a dead end, and a match stays a match.
  const JsonPattern any = JsonPattern::compile("cat", "pattern");
  s = JsonPattern::start();
  for (char32_t c : std::u32string(U"concat")) ASSERT_TRUE(any.step(s, c));
  EXPECT_TRUE(any.accepts(s));
  for (char32_t c : std::u32string(U"enate")) ASSERT_TRUE(any.step(s, c));
  EXPECT_TRUE(any.accepts(s));
}

// Random values the matcher lets through (bytes chosen among those it takes) are JSON strings
// the reference regex finds the pattern in, and the walk never ends in a dead end.
TEST(JsonPattern, RandomGeneratedStringsMatchTheReference) {
  for (const char* pattern : {"^[a-c]{2,4}-[xy]?$", "^(ab|ba)+\\d$", "^\\w{1,3}(\\.\\w{1,2})*$", "(cat|d\\u00f6g)", "\\d$"}) {
    const JsonSchema s = JsonSchema::parse(std::string(R"({"type": "string", "pattern": )") +
                                               nlohmann::json(pattern).dump() + ", \"maxLength\": 12}",
                                           "json_schema");
    const std::wregex reference(wide(pattern), std::regex::ECMAScript);
    std::uint32_t rng = 7;
    for (int i = 0; i < 60; ++i) {
      JsonMatcher m(s);
      std::string text;
      while (!m.complete()) {
        std::vector<unsigned char> can;
        for (int b = 0; b < 256; ++b) {
          JsonMatcher t = m;
          if (t.feed(static_cast<unsigned char>(b))) can.push_back(static_cast<unsigned char>(b));
        }
        ASSERT_FALSE(can.empty()) << pattern << " dead end after " << nlohmann::json(text).dump();
        rng = rng * 1664525u + 1013904223u;
        const unsigned char b = can[(rng >> 8) % can.size()];
        ASSERT_TRUE(m.feed(b));
        text.push_back(static_cast<char>(b));
      }
      const nlohmann::json v = nlohmann::json::parse(text);
      ASSERT_TRUE(v.is_string()) << text;
      EXPECT_TRUE(std::regex_search(wide(v.get<std::string>()), reference)) << pattern << ": " << text;
    }
  }
}

}  // namespace
}  // namespace staticlm
