// JSON Schema's "pattern" (an ECMA-262 regular expression, searched anywhere in the string
// unless anchored with ^ / $) compiled for constrained generation: a position automaton
// (Glushkov's construction) over code points, whose state is a bit per position, so a
// matcher can say after each character whether the string can still match and, at the
// closing quote, whether it does.
//
// Supported: literals, `.`, classes `[...]` / `[^...]` with ranges, the escapes \d \D \w \W \s
// \S \t \n \r \f \v \0 \xHH \uHHHH \cX and escaped punctuation, Unicode properties \p{...} /
// \P{...} as ECMA-262 spells them with the u flag (General_Category values, scripts with sc= /
// Script=, binary properties; Oniguruma's tables, regex.h), groups `(...)` `(?:...)`
// `(?<name>...)`, alternation, the quantifiers * + ? {n} {n,} {n,m} (lazy or not: the same
// strings match), ^ at the start and $ at the end of the pattern or of a top-level
// alternative. Refused by name (a pattern is never half enforced): backreferences, lookaround,
// word boundaries, anchors elsewhere, and patterns of more than kMaxPositions character
// positions once the counted repeats are written out.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace staticlm {

class JsonPattern {
 public:
  static constexpr int kMaxPositions = 256;  // position 0 is the start
  using State = std::array<std::uint64_t, kMaxPositions / 64>;

  // Throws kInvalidArgument starting with `what` ("json_schema at /properties/id/pattern").
  static JsonPattern compile(std::string_view pattern, const std::string& what);

  // Keeps only the characters in the sorted, disjoint ranges `allowed` (a JSON string without \u
  // escapes cannot hold control characters but \b \t \n \f \r): the rest are never taken,
  // and the lengths to a match are measured without them.
  void keep_only(const std::vector<std::pair<char32_t, char32_t>>& allowed);

  // Before the first character.
  static State start() { return State{1}; }
  // Takes one more character; false when no string that starts so can match (the state is
  // then empty).
  bool step(State& state, char32_t c) const;
  // Whether some character in [lo, hi] can be taken and then matched with at most `at_most` and
  // at least `at_least` more characters (so a UTF-8 character or an escape is begun only when
  // one of the characters it can become leaves a match within minLength / maxLength).
  bool may_step(const State& state, char32_t lo, char32_t hi, std::int64_t at_most, std::int64_t at_least) const;
  // The characters so far match.
  bool accepts(const State& state) const;
  // The whole of `text` (UTF-8) matches: regex search semantics, as a validator checks it.
  bool matches(std::string_view text) const;
  // The fewest characters that can follow the state in a match; -1 when none can.
  std::int64_t fewest_to_match(const State& state) const;

  // Whether a match can follow the state with between at_least and at_most more characters
  // (at_most INT64_MAX: no upper bound). Exact where measure_lengths covered at_most, or where
  // the fewest / most say it; otherwise (a window inside both, past the measured lengths) true.
  bool can_match(const State& state, std::int64_t at_least, std::int64_t at_most) const;
  // Records, for each position, every number of characters up to `cap` that can follow it in a
  // match, so can_match is exact for windows below cap (matches of lengths 2 and 6 leave none
  // between 3 and 5, which the fewest and the most do not show). Bits: cap per position.
  void measure_lengths(std::int64_t cap);
  std::int64_t positions() const { return static_cast<std::int64_t>(positions_.size()); }

 private:
  struct Range {
    char32_t lo, hi;
  };
  struct Position {
    std::vector<Range> ranges;  // sorted, disjoint
    State follow{};             // the positions that may come next
  };
  void measure();  // fewest_ / most_ from follow and last_ (and forgets measure_lengths)
  bool position_can_match(int q, std::int64_t at_least, std::int64_t at_most) const;

  std::vector<Position> positions_;  // [0]: the start, no ranges
  State last_{};                     // accepting positions (0 when the empty string matches)
  std::vector<std::int64_t> fewest_, most_;  // per position; -1: no match from it
  std::int64_t lengths_cap_ = -1;                 // measure_lengths' cap; -1: not measured
  std::vector<std::vector<std::uint64_t>> lengths_;  // per position: bit k set when k characters can follow
  friend class JsonPatternBuilder;
};

}  // namespace staticlm
