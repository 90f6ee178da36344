#include "text/json_pattern.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "test_util.h"
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

// \p{...} / \P{...} (ECMA-262's Unicode property escapes, as ajv compiles patterns with the u
// flag): General_Category values, scripts and binary properties, inside classes too.
TEST(JsonPattern, UnicodePropertiesAreCodePointClasses) {
  const auto p = [](const char* x) { return JsonPattern::compile(x, "pattern"); };
  EXPECT_TRUE(p("^\\p{L}+$").matches("\xC3\xA9\xE4\xB8\xAD" "abc"));  // é中abc
  EXPECT_FALSE(p("^\\p{L}+$").matches("a1"));
  EXPECT_TRUE(p("^\\P{L}$").matches("1"));
  EXPECT_FALSE(p("^\\P{L}$").matches("a"));
  EXPECT_TRUE(p("^[\\p{Lu}\\d]+$").matches("AB12"));
  EXPECT_FALSE(p("^[\\p{Lu}\\d]+$").matches("Ab"));
  EXPECT_TRUE(p("^[^\\p{L}]$").matches("7"));
  EXPECT_TRUE(p("^\\p{sc=Greek}+$").matches("\xCE\xB1\xCE\xB2"));  // αβ
  EXPECT_FALSE(p("^\\p{Script=Greek}+$").matches("ab"));
  EXPECT_TRUE(p("^\\p{Script=Latin}+$").matches("ab"));
  EXPECT_TRUE(p("^\\p{gc=Nd}$").matches("\xD9\xA3"));  // ٣ ARABIC-INDIC DIGIT THREE
  EXPECT_TRUE(p("^\\p{General_Category=Decimal_Number}$").matches("3"));
  EXPECT_TRUE(p("^\\p{White_Space}$").matches("\xE3\x80\x80"));  // U+3000
  for (const char* bad : {"\\p{letter}", "\\p{Alnum}", "\\p{Foo}", "\\p{scx=Greek}", "\\p{L", "\\pL", "[\\p{Nope}]"}) {
    EXPECT_THROW((void)p(bad), Error) << bad;
  }
  try {
    (void)p("x\\p{Latn_Foo}");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("pattern: unknown Unicode property \\p{Latn_Foo}", 0), 0u) << e.what();
  }
}

// The automaton's verdicts, and what generation writes, against node's RegExp with the u flag
// (another engine, with ICU's Unicode tables): strings drawn from a pool of letters, digits,
// marks, spaces and symbols of many scripts, and random walks of the matcher.
TEST(JsonPattern, UnicodePropertiesAgreeWithNode) {
  const std::vector<const char*> patterns = {
      "^\\p{L}+$", "^\\p{Lu}\\p{Ll}*$", "^[\\p{L}\\p{Nd} ]{2,6}$", "\\P{L}", "^\\p{sc=Cyrillic}+\\d?$",
      "^[^\\p{P}\\p{Z}]+$", "^\\p{N}+$", "^[\\p{Script=Han}\\p{Script=Hiragana}]+$", "\\p{Sc}\\d", "^\\p{M}?\\p{Alphabetic}$"};
  const std::vector<std::string> pool = {"a", "Z", "7", " ", "\xC3\xA9", "\xC3\x89", "\xCE\xB1", "\xCE\xA9", "\xD0\xB6",
                                         "\xD0\x96", "\xE4\xB8\xAD", "\xE3\x81\x82", "\xD9\xA3", "\xE2\x82\xAC", "$", "!",
                                         "\xCC\x81", "\xE3\x80\x80", "\xC2\xA0", "_", "-", "\xF0\x9F\x98\x80", "\xE2\x85\xA3",
                                         "\xC2\xB2", "\xD7\x90"};
  test::TempDir dir;
  const std::string cases = dir.file("cases.jsonl");
  std::ofstream out(cases);
  std::vector<bool> ours;
  std::uint32_t rng = 11;
  const auto next = [&rng] { return rng = rng * 1664525u + 1013904223u, rng >> 8; };
  for (const char* pattern : patterns) {
    const JsonPattern automaton = JsonPattern::compile(pattern, "pattern");
    for (int i = 0; i < 150; ++i) {  // pool strings of 1-4 characters
      std::string text;
      for (std::uint32_t n = 1 + next() % 4; n > 0; --n) text += pool[next() % pool.size()];
      out << nlohmann::json{{"pattern", pattern}, {"text", text}}.dump() << "\n";
      ours.push_back(automaton.matches(text));
    }
    const JsonSchema s = JsonSchema::parse(std::string(R"({"type": "string", "maxLength": 8, "pattern": )") +
                                               nlohmann::json(pattern).dump() + "}",
                                           "json_schema");
    for (int i = 0; i < 40; ++i) {  // generated: must match
      JsonMatcher m(s);
      std::string text;
      while (!m.complete() || next() % 4 != 0) {
        std::vector<unsigned char> can;
        for (int b = 0; b < 256; ++b) {
          if (JsonMatcher(m).feed(static_cast<unsigned char>(b))) can.push_back(static_cast<unsigned char>(b));
        }
        if (can.empty()) break;
        const unsigned char b = can[next() % can.size()];
        m.feed(b);
        text.push_back(static_cast<char>(b));
      }
      ASSERT_TRUE(m.complete()) << pattern << " dead end after " << text;
      const std::string value = nlohmann::json::parse(text).get<std::string>();
      out << nlohmann::json{{"pattern", pattern}, {"text", value}}.dump() << "\n";
      ours.push_back(true);
    }
  }
  out.close();
  const test::CommandResult r = test::run_command("node " + test::fixture("../../tools/pattern_reference.mjs") + " " + cases);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream verdicts(r.out);
  std::ifstream written(cases);
  std::string verdict, line;
  std::size_t i = 0, matched = 0;
  while (std::getline(verdicts, verdict) && std::getline(written, line)) {
    ASSERT_LT(i, ours.size());
    EXPECT_EQ(verdict == "1", ours[i]) << line;
    matched += ours[i] ? 1 : 0;
    ++i;
  }
  EXPECT_EQ(i, ours.size());
  EXPECT_GT(matched, ours.size() / 3);  // both verdicts are exercised
  EXPECT_LT(matched, ours.size());
}

}  // namespace
}  // namespace staticlm
