// GBNF grammars: the parser's errors, and the matcher checked against recognizers written apart
// (std::regex for regular grammars, closed forms for Dyck words and a^n b^n, nlohmann's JSON
// parser for a JSON grammar), and the constraint's vocabulary walk against token-by-token feeding.
#include "text/gbnf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "test_util.h"
#include "text_test_util.h"
#include "text/grammar_constraint.h"
#include "text/grammar_matcher.h"
#include "text/tokenizer.h"

namespace staticlm {
namespace {

std::shared_ptr<const Grammar> grammar(const std::string& text) {
  return std::make_shared<const Grammar>(Grammar::parse(text, "g"));
}

// -1: the matcher takes every byte and the text is whole; else the byte it refused (or the
// length, when it took them all but the text is not whole).
std::int64_t refusal(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!m.feed(static_cast<unsigned char>(text[i]))) return static_cast<std::int64_t>(i);
  }
  return m.complete() ? -1 : static_cast<std::int64_t>(text.size());
}

bool matches(const std::shared_ptr<const Grammar>& g, const std::string& text) { return refusal(g, text) == -1; }

std::string parse_error(const std::string& text) {
  try {
    Grammar::parse(text, "g.gbnf");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "parsed: " << text;
  return "";
}

TEST(Gbnf, BadGrammarsAreRefusedByLineAndWhat) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "line 1, column 1: no rule named 'root'"},
      {"item ::= \"a\"", "no rule named 'root'"},
      {"root ::= item\n", "line 1, column 10: rule 'item' is used but never defined"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {"root ::= root \"a\" | \"b\"", "left recursion: rule 'root'"},
      {"root ::= e\ne ::= s e \"x\" | \"y\"\ns ::= \" \"?", "left recursion: rule 'e'"},  // through a rule that can be empty
      {"root ::= \"a\\q\"", "line 1, column 12: unknown escape '\\q'"},
      {"root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')'), "groups nested deeper than 256"},
      {"root ::= \"abc", "a string literal that never closes"},
      {"root ::= [a-z", "a character class '[' that never closes"},
      {"root ::= [z-a]", "the range's end comes before its start"},
      {"root ::= (\"a\" | \"b\"", "expected ')'"},
      {"root ::= * \"a\"", "'*' has nothing before it to repeat"},
      {"root ::= \"a\"{3,2}", "the repeat's most (2) is below its least (3)"},
      {"root ::= \"a\"{2", "expected '}'"},
      {"root ::= \"a\"{99999}", "a repeat count past 10000"},
      {"root ::= \"a\" ) \"b\"", "line 1, column 14: expected the end of the line after rule 'root', found ')'"},
      {"root = \"a\"", "expected ::= after the rule name 'root'"},
      {"::= \"a\"", "expected a rule name"},
      {"root ::= \"\\x4\"", "\\x takes 2 hex digits"},
      {"root ::= \"\\U00110000\"", "code point past U+10FFFF"},
      {"root ::= <think>", "token <think> needs the model's tokenizer"},
      {"root ::= \"a\" root", "rule 'root' allows no text that ends"},
      {"root ::= x []\nx ::= \"a\"", "rule 'root' allows no text that ends"},
      {"root ::= <[12]>", "token <[12]> needs the model's tokenizer"},
      {"root ::= \"" + std::string(120, 'a') + "\"{10000}", "elements once its repeats are written out"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string e = parse_error(text);
    EXPECT_NE(e.find("g.gbnf: "), std::string::npos) << e;
    EXPECT_NE(e.find(expected), std::string::npos) << text << " -> " << e;
  }
}

// Rules end with their line but inside parentheses and after `|`; comments run to the line's end.
TEST(Gbnf, NewlinesCommentsAndNames) {
  const auto g = grammar(
      "# a list\n"
      "root ::= (\n"
      "  item-1   # first\n"
      "  (\",\" item_2)*\n"
      ")\r\n"
      "item-1 ::= \"a\" |\n"
      "  \"b\"\n"
      "item_2 ::= [0-9]\n");
  for (const char* ok : {"a", "b", "a,1,2", "b,9"}) EXPECT_TRUE(matches(g, ok)) << ok;
  for (const char* bad : {"", "c", "a,", "a,b", "ab"}) EXPECT_FALSE(matches(g, bad)) << bad;
  // Outside parentheses a newline ends the rule: "b" on the next line is a new rule, not an alternative.
  EXPECT_NE(parse_error("root ::= \"a\"\n  | \"b\"").find("line 2, column 3: expected a rule name"), std::string::npos);
}

// Regular grammars against the same language as a std::regex, on every string over a small
// alphabet up to a length; and walks that the matcher leads must end in accepted strings
// (a prefix it takes always has a completion).
TEST(Gbnf, RegularGrammarsMatchTheirRegex) {
  struct Case {
    std::string gbnf, regex, alphabet;
  };
  const std::vector<Case> cases = {
      {"root ::= [a-c]+ (\"x\" | \"yz\"){1,3} \"!\"?", "[a-c]+(x|yz){1,3}!?", "abxyz!"},
      {"root ::= \"a\"{2,4}", "a{2,4}", "ab"},
      {"root ::= \"ab\"{3}", "(ab){3}", "ab"},
      {"root ::= (\"a\" | \"b\" \"c\"?){2,}", "(a|bc?){2,}", "abc"},
      {"root ::= [^a-y]* \"a\"", "[^a-y]*a", "abz"},
      {"root ::= x x? y\nx ::= \"a\" | \"ab\"\ny ::= \"b\"* | \"c\"", "(a|ab)(a|ab)?(b*|c)", "abc"},
      {"root ::= \"\" | \"a\" root", "a*", "ab"},  // right recursion
      {"root ::= (\"a\"?)* \"b\"\nx ::= y | \"q\"\ny ::= x", "a*b", "ab"},  // loops that push nothing
      {"root ::= \"a\" [] | \"b\" x\nx ::= \"c\" x | \"d\"", "bc*d", "abcd"},  // alternatives that never end dropped
      {"root ::= [a\\]\\\\-]+ \"\\x21\"", "[a\\]\\\\-]+!", "a]\\-!b"},
      {"root ::= .{1,2} \"a\"{,2}", "(a|b){1,2}a{0,2}", "ab"},
  };
  for (const Case& c : cases) {
    const auto g = grammar(c.gbnf);
    const std::regex re(c.regex);
    std::vector<std::string> level = {""};
    std::int64_t accepted = 0;
    while (!level.empty()) {
      std::vector<std::string> next;
      for (const std::string& s : level) {
        const bool expected = std::regex_match(s, re);
        ASSERT_EQ(matches(g, s), expected) << c.gbnf << " on '" << s << "'";
        accepted += expected;
        if (level.size() * c.alphabet.size() > 50000) continue;
        for (char a : c.alphabet) next.push_back(s + a);
      }
      level = std::move(next);
    }
    EXPECT_GT(accepted, 0) << c.gbnf;
    std::mt19937 rng(7);
    for (int walk = 0; walk < 200; ++walk) {
      GrammarMatcher m(g);
      std::string text;
      for (int step = 0; step < 12; ++step) {
        std::vector<char> taken;
        for (char a : c.alphabet) {
          GrammarMatcher copy = m;
          if (copy.feed(static_cast<unsigned char>(a))) taken.push_back(a);
        }
        if (taken.empty() || (m.complete() && rng() % 3 == 0)) break;
        text += taken[rng() % taken.size()];
        ASSERT_TRUE(m.feed(static_cast<unsigned char>(text.back())));
      }
      if (!m.complete()) {
        // Only the walk's length can stop it short; then some byte must go on.
        bool goes_on = false;
        for (char a : c.alphabet) {
          GrammarMatcher copy = m;
          goes_on |= copy.feed(static_cast<unsigned char>(a));
        }
        EXPECT_TRUE(goes_on) << c.gbnf << ": dead end after '" << text << "'";
        continue;
      }
      EXPECT_TRUE(std::regex_match(text, re)) << c.gbnf << " walked '" << text << "'";
    }
  }
}

// Context-free languages with closed-form prefixes: Dyck words (a prefix is viable while no ')'
// outnumbers the '(' before it) and a^n b^n (viable while b's do not outnumber a's).
TEST(Gbnf, ContextFreeGrammarsRefuseAtTheFirstHopelessByte) {
  const auto dyck = grammar("root ::= (\"(\" root \")\")*");
  const auto anbn = grammar("root ::= \"a\" root \"b\" | \"\"");
  std::mt19937 rng(3);
  for (int t = 0; t < 3000; ++t) {
    std::string s;
    const int len = static_cast<int>(rng() % 16);
    for (int i = 0; i < len; ++i) s += rng() % 2 ? '(' : ')';
    std::int64_t expect = -1;
    int depth = 0;
    for (std::size_t i = 0; i < s.size() && expect < 0; ++i) {
      depth += s[i] == '(' ? 1 : -1;
      if (depth < 0) expect = static_cast<std::int64_t>(i);
    }
    if (expect < 0 && depth > 0) expect = static_cast<std::int64_t>(s.size());
    ASSERT_EQ(refusal(dyck, s), expect) << s;

    std::string ab;
    for (char c : s) ab += c == '(' ? 'a' : 'b';
    std::int64_t a = 0, b = 0, expect_ab = -1;
    for (std::size_t i = 0; i < ab.size() && expect_ab < 0; ++i) {
      if (ab[i] == 'a') {
        if (b > 0) expect_ab = static_cast<std::int64_t>(i);
        ++a;
      } else if (++b > a) {
        expect_ab = static_cast<std::int64_t>(i);
      }
    }
    if (expect_ab < 0 && a != b) expect_ab = static_cast<std::int64_t>(ab.size());
    ASSERT_EQ(refusal(anbn, ab), expect_ab) << ab;
  }
  // Deep nesting keeps working (a rule referenced last pushes nothing; the others one frame each).
  std::string deep(3000, '(');
  deep += std::string(3000, ')');
  EXPECT_TRUE(matches(dyck, deep));
}

TEST(Gbnf, CodePointsAndUtf8) {
  const auto kana = grammar("root ::= [ぁ-ゟ]+");
  EXPECT_TRUE(matches(kana, "あいう"));
  EXPECT_EQ(refusal(kana, "あa"), 3);
  EXPECT_EQ(refusal(kana, "\xE3\x81"), 2);  // a character begun that can still be one
  EXPECT_EQ(refusal(kana, "\xE4"), 0);      // a lead byte of U+4000..U+4FFF: none in the class
  EXPECT_EQ(refusal(kana, "\xE3\x80"), 1);  // U+3000..U+303F: none either
  const auto any = grammar("root ::= . .");
  EXPECT_TRUE(matches(any, "a\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_TRUE(matches(any, "\n\xC3\xA9"));
  EXPECT_EQ(refusal(any, "\xC0\x80"), 0);          // overlong
  EXPECT_EQ(refusal(any, "\xED\xA0\x80"), 1);      // a surrogate
  EXPECT_EQ(refusal(any, "\xF4\x90\x80\x80"), 1);  // past U+10FFFF
  EXPECT_EQ(refusal(any, "\x80"), 0);
  EXPECT_EQ(refusal(any, "\xC3" "a"), 1);
  const auto esc = grammar("root ::= \"\\u00e9\\U0001F600\\x41\\t\" [\\n\\r]");
  EXPECT_TRUE(matches(esc, "\xC3\xA9\xF0\x9F\x98\x80" "A\t\r"));
  EXPECT_FALSE(matches(esc, "\xC3\xA9\xF0\x9F\x98\x80" "A\t "));
}

// A JSON grammar in GBNF (written here, after llama.cpp's json.gbnf) against nlohmann's parser:
// random values it dumps are taken, and texts the matcher leads a random walk to parse.
TEST(Gbnf, JsonGrammarAgreesWithAJsonParser) {
  const auto g = grammar(R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,2})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)");
  std::mt19937 rng(11);
  std::function<nlohmann::json(int)> value = [&](int depth) -> nlohmann::json {
    switch (depth > 3 ? rng() % 4 : rng() % 6) {
      case 0: return static_cast<int>(rng() % 2000) - 1000;
      case 1: return std::string("k\xC3\xA9\"\\\n") + static_cast<char>('a' + rng() % 26);
      case 2: return rng() % 2 == 0;
      case 3: return nullptr;
      case 4: {
        nlohmann::json a = nlohmann::json::array();
        for (unsigned i = rng() % 4; i > 0; --i) a.push_back(value(depth + 1));
        return a;
      }
      default: {
        nlohmann::json o = nlohmann::json::object();
        for (unsigned i = rng() % 4; i > 0; --i) o[std::string(1, static_cast<char>('a' + rng() % 26))] = value(depth + 1);
        return o;
      }
    }
  };
  for (int t = 0; t < 200; ++t) {
    nlohmann::json o = nlohmann::json::object();
    o["v"] = value(0);
    EXPECT_TRUE(matches(g, o.dump())) << o.dump();
    EXPECT_TRUE(matches(g, o.dump(2))) << o.dump(2);
  }
  for (const char* bad : {"[1]", "{\"a\":01}", "{\"a\":1,}", "{'a':1}", "{\"a\":tru}", "{\"\t\":1}"}) {
    EXPECT_FALSE(matches(g, bad)) << bad;
  }
  const std::string bytes = "{}[],:\"\\ \n-.0123456789eEtrufalsnbx\x7F";
  int parsed = 0;
  for (int walk = 0; walk < 300; ++walk) {
    GrammarMatcher m(g);
    std::string text;
    for (int step = 0; step < 200 && !(m.complete() && rng() % 4 == 0); ++step) {
      std::vector<char> taken;
      for (char b : bytes) {
        GrammarMatcher copy = m;
        if (copy.feed(static_cast<unsigned char>(b))) taken.push_back(b);
      }
      ASSERT_FALSE(taken.empty() && !m.complete()) << "dead end after " << text;
      if (taken.empty()) break;
      char next = taken[rng() % taken.size()];
      // Past 30 bytes, head for the end: close strings, then arrays and objects.
      for (char closing : std::string("\"]}:0")) {
        if (step > 30 && std::find(taken.begin(), taken.end(), closing) != taken.end()) {
          next = closing;
          break;
        }
      }
      text += next;
      m.feed(static_cast<unsigned char>(text.back()));
    }
    if (!m.complete()) continue;
    ++parsed;
    EXPECT_TRUE(nlohmann::json::accept(text)) << text;
  }
  EXPECT_GT(parsed, 20);
}

TEST(Gbnf, AmbiguityPastTheLimitIsRefused) {
  const auto g = grammar("root ::= (\"a\"?){5000} \"b\"");  // 5001 places the first character can be
  try {
    GrammarMatcher m(g);
    ADD_FAILURE() << "5001 readings were taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 4096 readings"), std::string::npos) << e.what();
  }
  // Repeats of repeats: each + wraps the last in a rule, and the ways to reach a character
  // double with each (a fuzzer's grammar took minutes before its first byte).
  const std::string stacked = "root ::= [a-c]+*" + std::string(22, '+') + " (\"x\" | \".y*z\"){2,3}? \"b\"";
  for (const std::string& text : {stacked, std::string("a ::= [a-c]+ \"d\"?\nb ::= a+ a*\nc ::= b+ b*\nd ::= c+ c*\ne ::= d+ d*\n"
                                                      "f ::= e+ e*\ng ::= f+ f*\nh ::= g+ g*\nroot ::= h+ \"b\"")}) {
    try {
      GrammarMatcher m(grammar(text));
      for (int i = 0; i < 100; ++i) m.feed('a');
      ADD_FAILURE() << text << ": taken";
    } catch (const Error& e) {
      // The stacked one's readings merge only after 2^22 ways of reaching them are walked.
      const std::string limit = text == stacked ? "more than 262144 ways to the next character" : "readings of the text";
      EXPECT_NE(std::string(e.what()).find(limit), std::string::npos) << text << ": " << e.what();
    }
  }
  EXPECT_TRUE(matches(grammar("root ::= [a-c]++ \"b\""), "abcab"));  // a few repeats of repeats still run
  const auto fits = grammar("root ::= (\"a\"?){4000} \"b\"");
  EXPECT_TRUE(matches(fits, "b"));
  EXPECT_EQ(refusal(fits, "c"), 0);
  const auto few = grammar("root ::= (\"a\"?){50} \"b\"");
  EXPECT_TRUE(matches(few, std::string(50, 'a') + "b"));
  EXPECT_EQ(refusal(few, std::string(51, 'a')), 50);
}

// The constraint's mask two ways after `prefix` (token ids): its walk over the sorted vocabulary,
// and every token fed to a copy of a matcher (as text and as a token element).
void expect_same_mask(const std::string& text, const std::vector<int>& prefix) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const TokenIndex& index = tok.token_index();
  const std::int64_t vocab = tok.id_limit();
  auto g = std::make_shared<const Grammar>(parse_grammar(text, "g", &tok, vocab));
  const std::vector<std::int64_t> ends = {1, 106};
  GrammarConstraint c(g, index, ends);
  for (int id : prefix) c.accept(id);
  GrammarMatcher m(g);
  for (int id : prefix) {
    GrammarMatcher as_text = m;
    bool ok = !index.bytes[static_cast<std::size_t>(id)].empty();
    for (char b : index.bytes[static_cast<std::size_t>(id)]) ok = ok && as_text.feed(static_cast<unsigned char>(b));
    const bool as_token = m.feed_token(id);
    if (ok && as_token) m.absorb(as_text);
    if (ok && !as_token) m = as_text;
    ASSERT_TRUE(ok || as_token) << text << ": prefix token " << id;
  }
  std::vector<std::uint8_t> fast;
  c.allowed(vocab, fast);
  std::int64_t count = 0;
  for (std::int64_t id = 0; id < vocab; ++id) {
    const std::string& b = index.bytes[static_cast<std::size_t>(id)];
    bool ok = !b.empty();
    GrammarMatcher copy = m;
    for (std::size_t i = 0; ok && i < b.size(); ++i) ok = copy.feed(static_cast<unsigned char>(b[i]));
    GrammarMatcher as_token = m;
    if (id == 1 || id == 106) {
      ok = m.complete();
    } else {
      ok = ok || as_token.feed_token(id);
    }
    count += ok;
    if (fast[static_cast<std::size_t>(id)] != ok) {
      ADD_FAILURE() << text << ": token " << id << " '" << b << "' walk " << int(fast[static_cast<std::size_t>(id)]) << ", one by one " << ok;
      return;
    }
  }
  EXPECT_GT(count, 0) << text;
}

TEST(GrammarConstraint, VocabularyWalkEqualsTokenByToken) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const std::string list = "root ::= (\"- \" [a-zé]+ \"\\n\"){1,3}";
  expect_same_mask(list, {});
  expect_same_mask(list, tok.encode("- caf"));
  expect_same_mask(list, tok.encode("- café\n"));
  expect_same_mask(list, tok.encode("- a\n- b\n- c\n"));  // complete: the end tokens only
  const std::string yes_no = "root ::= (\"Yes\" | \"No\") \", because \" [^\\n]{0,12} \"\\n\"";
  expect_same_mask(yes_no, {});
  expect_same_mask(yes_no, tok.encode("No, because it"));
  // Inside a loop over a class most tokens are taken unfed (GrammarMatcher::loop_chars).
  const std::string object = R"(root ::= "{\"k\": \"" ([^"\\\x00-\x1F] | "\\" ["\\nt])* "\"}" | "[" [a-z]+ "]")";
  expect_same_mask(object, {});
  expect_same_mask(object, tok.encode("{\"k\": \"caf"));
  expect_same_mask(object, tok.encode("{\"k\": \"caf\\"));
  expect_same_mask(object, tok.encode("[hel"));
  // Token elements: by id and by text, and any token but one.
  const int channel = tok.token_to_id("<|channel>");
  const int channel_end = tok.token_to_id("<channel|>");
  ASSERT_GE(channel, 0);
  ASSERT_GE(channel_end, 0);
  const std::string thinking = "root ::= <|channel> !<channel|>{0,3} <[" + std::to_string(channel_end) + "]> [a-z]+";
  expect_same_mask(thinking, {});
  expect_same_mask(thinking, {channel});
  expect_same_mask(thinking, {channel, 5000, 7});
  expect_same_mask(thinking, {channel, 5000, 7, 9});  // three taken: only <channel|> now
  expect_same_mask(thinking, {channel, channel_end});
}

TEST(GrammarConstraint, TokenFormsNameOneToken) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const std::int64_t vocab = tok.id_limit();
  const auto error = [&](const std::string& text) -> std::string {
    try {
      parse_grammar(text, "grammar", &tok, vocab);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(error("root ::= <|turn> <turn|>"), "");
  EXPECT_NE(error("root ::= <hello world>").find("token <hello world> is not one token of the vocabulary"), std::string::npos);
  EXPECT_NE(error("root ::= <[" + std::to_string(vocab) + "]>").find("is outside the vocabulary"), std::string::npos);
  EXPECT_NE(error("root ::= <[12a]>").find("expected <[ID]>"), std::string::npos);
  EXPECT_NE(error("root ::= <|turn").find("never closes"), std::string::npos);
  // A token's text read as text where a literal stands: the constraint takes it either way.
  auto g = std::make_shared<const Grammar>(parse_grammar("root ::= \"ab\" <|turn>", "grammar", &tok, vocab));
  GrammarConstraint c(g, tok.token_index(), {1});
  for (int id : tok.encode("ab")) c.accept(id);
  EXPECT_FALSE(c.done());
  c.accept(tok.token_to_id("<|turn>"));
  EXPECT_TRUE(c.done());
  EXPECT_THROW(GrammarConstraint(g, tok.token_index(), {1}).accept(tok.token_to_id("<|turn>")), Error);
}

}  // namespace
}  // namespace staticlm
