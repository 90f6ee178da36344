// Byte-by-byte matcher of a text against a GBNF Grammar: feed() says whether a byte can continue
// a text that is still the prefix of one the grammar allows.
//
// The state is the set of readings of the text so far (llama.cpp's "stacks"): each a stack of
// grammar positions, its top the character or token that comes next, the empty stack meaning
// root is whole. Stacks are interned in an arena the copies of a matcher share (a stack is an
// id: its top position and the id of the stack below), so a copy is a short vector of ids and a
// stack's successors once a character is read are worked out once. A rule referenced last in
// its alternative pushes nothing (so repeats and right recursion keep stacks flat).
// Multi-byte characters: each byte is checked against the code points it can still become.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "text/gbnf.h"

namespace staticlm {

class GrammarMatcher {
 public:
  // Readings of one text followed at once; an ambiguous grammar that needs more is refused.
  static constexpr std::size_t kMaxStacks = 4096;
  // Places the expansions of one step may visit on their way to the readings: repeats of repeats
  // (x+*+, a rule of repeats repeated) multiply the ways to reach a terminal before any merge.
  static constexpr std::size_t kMaxVisits = 64 * kMaxStacks;

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);
  GrammarMatcher(const GrammarMatcher&) = default;
  // A copy of another matcher of the same arena (the vocabulary walk's) touches no reference count.
  GrammarMatcher& operator=(const GrammarMatcher& other);

  // Takes one byte of UTF-8 text; false (the matcher unchanged: do not feed it further) when no
  // text the grammar allows starts with the bytes so far and this one.
  bool feed(unsigned char byte);
  // Takes a whole token matched by a token element (<[id]>, !<...>); false when no reading has
  // one next that takes `id` (the matcher unchanged).
  bool feed_token(std::int64_t id);
  // Adds the readings of `other`, a copy of this matcher fed otherwise (no character begun in
  // either): a token can be read as its text and as a token element.
  void absorb(const GrammarMatcher& other);
  // The text so far is whole (root complete; no character begun).
  bool complete() const { return pending_ == 0 && !heads_.empty() && heads_.front() == kEmpty; }
  // Nothing can follow.
  bool finished() const { return complete() && heads_.size() == 1; }
  // The tokens some reading takes next as a token element: `token` ids, and for `not_token`
  // any token but those (each list sorted, no repeats).
  void next_tokens(std::vector<std::int64_t>& token, std::vector<std::int64_t>& not_token) const;
  const Grammar& grammar() const { return *grammar_; }
  // The characters that leave the readings as they are (a string's characters inside "..."*,
  // the letters inside [a-z]+): a token of only these is taken without feeding it, and the
  // matcher is the same after it. Sorted, disjoint ranges; none while a character is begun.
  const std::vector<std::pair<char32_t, char32_t>>& loop_chars();

 private:
  static constexpr std::int32_t kEmpty = 0;  // the empty stack: root read whole
  struct Node {
    std::int32_t pos;     // into grammar.elements
    std::int32_t below;   // the stack under this position
    std::int32_t after = -1, after_end = -1;  // successors once the top is read: arena.after[after, after_end)
  };
  struct Arena {
    std::vector<Node> nodes;
    std::unordered_map<std::uint64_t, std::int32_t> ids;  // (pos, below) -> node
    std::vector<std::int32_t> after;
    std::vector<std::pair<std::int32_t, std::int32_t>> work;  // expand's scratch
    std::unordered_set<std::uint64_t> seen;
    std::size_t visits = 0;  // places expand visited in this step (construction, a feed): kMaxVisits
  };

  std::int32_t intern(std::int32_t pos, std::int32_t below);
  // Appends the stacks whose tops are terminals reached from `pos` over `below` without reading.
  void expand(std::int32_t pos, std::int32_t below, std::vector<std::int32_t>& out);
  // Moves the readings to the successors of those `take` accepts; false when none does.
  template <class Take>
  bool advance(Take take);
  // heads_ = next_, sorted and unique; refused past kMaxStacks.
  void take_next();
  bool any_top_meets(char32_t lo, char32_t hi) const;
  // Node `h`'s successors once its top is read (worked out on first use): arena.after[first, second).
  std::pair<std::int32_t, std::int32_t> successors(std::int32_t h);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<Arena> arena_;
  std::vector<std::int32_t> heads_;  // sorted ids of the readings
  std::vector<std::int32_t> next_;   // scratch
  std::vector<std::pair<char32_t, char32_t>> loop_;  // loop_chars' answer
  // A UTF-8 character begun: its bits so far and the bytes still to come.
  char32_t partial_ = 0;
  int pending_ = 0;
  int length_ = 0;  // the whole character's bytes
};

}  // namespace staticlm
