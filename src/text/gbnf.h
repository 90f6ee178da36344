// GBNF, llama.cpp's grammar format (`--grammar`, the server's `grammar` field), parsed into a
// context-free grammar over code points and tokens.
//
//   root  ::= item ("," ws item)*     rules: a name, ::=, alternatives separated by |
//   item  ::= [a-z]+ | "\"" [^"]* "\""   literals "...", classes [...] / [^...] with ranges, `.`
//   ws    ::= [ \t\n]{0,20}           groups (...), the repeats * + ? {m} {m,} {m,n} {,n}
//   think ::= <[105]> | !<end>        a token by id or by its text, or any token but one
//
// As llama.cpp reads it: names of letters, digits, '-' and '_'; escapes \xHH \uHHHH \UHHHHHHHH
// \t \r \n \\ \" \[ \]; `#` comments to the end of the line; a rule ends at the end of its line
// but inside parentheses or after a `|` (and after `::=`); `root` is where the text starts.
// Refused by name and line: undefined rules, a rule defined twice, a missing root, left
// recursion (a rule that can reach itself before reading anything with more to read after it:
// a matcher would never stop expanding it; ("a"?)* is fine), groups nested past 256, repeats
// past kMaxRepeat and grammars past kMaxElements once repeats are written out, token forms without a tokenizer or naming no single token, a root that allows no
// text that ends. Alternatives that can never end (an empty class `[]`, a rule that never ends)
// are dropped, so every text a matcher takes can be finished.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace staticlm {

struct GrammarElement {
  enum class Type : std::uint8_t {
    kEnd,       // the end of an alternative
    kChars,     // one code point in char_sets[value]
    kRule,      // rule `value`
    kToken,     // the token `value`
    kNotToken,  // any one token but `value`
  };
  Type type = Type::kEnd;
  std::int32_t value = 0;
};

class Grammar {
 public:
  static constexpr std::int64_t kMaxRepeat = 10000;
  static constexpr std::size_t kMaxElements = 1 << 20;
  // A token's id from its text (nullopt: the text is not exactly one token).
  using TokenLookup = std::function<std::optional<std::int64_t>(std::string_view text)>;

  // `what` names the grammar in errors ("--grammar-file g.gbnf"); `vocab` bounds <[id]> (0: no
  // tokenizer, token forms refused).
  static Grammar parse(std::string_view text, const std::string& what, const TokenLookup& tokens = {},
                       std::int64_t vocab = 0);

  // Each alternative of each rule is its elements followed by kEnd, all in one array;
  // alternatives[r] says where rule r's begin. Rules made for groups and repeats are named
  // after the rule they stand in ("item_3").
  std::vector<GrammarElement> elements;
  std::vector<std::vector<std::int32_t>> alternatives;
  std::vector<std::string> names;
  std::vector<std::vector<std::pair<char32_t, char32_t>>> char_sets;  // each sorted and disjoint
  std::int32_t root = -1;
  bool has_tokens = false;  // some element is kToken or kNotToken

  bool in_set(std::int32_t set, char32_t c) const;
  // Whether set `set` holds a code point in [lo, hi].
  bool meets_set(std::int32_t set, char32_t lo, char32_t hi) const;
};

}  // namespace staticlm
