#include "text/grammar_matcher.h"

#include <algorithm>

#include "base/error.h"

namespace staticlm {

namespace {

using Type = GrammarElement::Type;

void sort_unique(std::vector<std::int32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// The code points a UTF-8 character can still become once `left` more continuation bytes follow
// `bits` in a character of `length` bytes: [lo, hi] with overlong forms, surrogates and code
// points past U+10FFFF left out; false when none is left.
bool reachable(char32_t bits, int left, int length, char32_t& lo, char32_t& hi) {
  const int shift = 6 * left;
  lo = bits << shift;
  hi = lo | ((char32_t{1} << shift) - 1);
  const char32_t least = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  lo = std::max(lo, least);
  hi = std::min<char32_t>(hi, 0x10FFFF);
  if (lo >= 0xD800 && hi <= 0xDFFF) return false;
  return lo <= hi;
}

// A (position, stack below) pair as one hash key.
std::uint64_t pair_key(std::int32_t pos, std::int32_t below) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(pos)) << 32) | static_cast<std::uint32_t>(below);
}

[[noreturn]] void too_ambiguous(const std::string& what) {
  invalid_argument("grammar: more than " + what + " (an ambiguous grammar; write its alternatives so one reading fits)");
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), arena_(std::make_shared<Arena>()) {
  arena_->nodes.push_back({-1, -1});  // kEmpty
  for (const std::int32_t alt : grammar_->alternatives[static_cast<std::size_t>(grammar_->root)]) expand(alt, kEmpty, next_);
  take_next();
}

void GrammarMatcher::take_next() {
  sort_unique(next_);
  if (next_.size() > kMaxStacks) too_ambiguous(std::to_string(kMaxStacks) + " readings of the text so far");
  heads_.swap(next_);
}

std::int32_t GrammarMatcher::intern(std::int32_t pos, std::int32_t below) {
  const auto [it, added] = arena_->ids.emplace(pair_key(pos, below), static_cast<std::int32_t>(arena_->nodes.size()));
  if (added) arena_->nodes.push_back({pos, below});
  return it->second;
}

void GrammarMatcher::expand(std::int32_t pos, std::int32_t below, std::vector<std::int32_t>& out) {
  // A work list, not recursion (stacks run as deep as the text nests), and each (position,
  // stack) taken once (rules that can be empty reach the same places many ways).
  auto& work = arena_->work;
  auto& seen = arena_->seen;
  work.assign(1, {pos, below});
  seen.clear();
  while (!work.empty()) {
    const auto [p, b] = work.back();
    work.pop_back();
    if (!seen.insert(pair_key(p, b)).second) continue;
    if (++arena_->visits > kMaxVisits) too_ambiguous(std::to_string(kMaxVisits) + " ways to the next character");
    const GrammarElement e = grammar_->elements[static_cast<std::size_t>(p)];
    if (e.type == Type::kEnd) {
      if (b == kEmpty) {
        out.push_back(kEmpty);
      } else {
        const Node n = arena_->nodes[static_cast<std::size_t>(b)];
        work.emplace_back(n.pos, n.below);
      }
    } else if (e.type == Type::kRule) {
      const bool last = grammar_->elements[static_cast<std::size_t>(p) + 1].type == Type::kEnd;
      const std::int32_t then = last ? b : intern(p + 1, b);
      for (const std::int32_t alt : grammar_->alternatives[static_cast<std::size_t>(e.value)]) work.emplace_back(alt, then);
    } else {
      out.push_back(intern(p, b));
    }
  }
}

GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  if (arena_ != other.arena_) {
    grammar_ = other.grammar_;
    arena_ = other.arena_;
  }
  heads_ = other.heads_;
  partial_ = other.partial_;
  pending_ = other.pending_;
  length_ = other.length_;
  return *this;
}

std::pair<std::int32_t, std::int32_t> GrammarMatcher::successors(std::int32_t h) {
  const auto at = static_cast<std::size_t>(h);
  if (arena_->nodes[at].after < 0) {
    std::vector<std::int32_t> out;
    const Node n = arena_->nodes[at];
    expand(n.pos + 1, n.below, out);
    sort_unique(out);
    arena_->nodes[at].after = static_cast<std::int32_t>(arena_->after.size());
    arena_->after.insert(arena_->after.end(), out.begin(), out.end());
    arena_->nodes[at].after_end = static_cast<std::int32_t>(arena_->after.size());
  }
  return {arena_->nodes[at].after, arena_->nodes[at].after_end};
}

template <class Take>
bool GrammarMatcher::advance(Take take) {
  next_.clear();
  arena_->visits = 0;
  for (const std::int32_t h : heads_) {
    if (h == kEmpty) continue;
    if (!take(grammar_->elements[static_cast<std::size_t>(arena_->nodes[static_cast<std::size_t>(h)].pos)])) continue;
    const auto [first, last] = successors(h);
    next_.insert(next_.end(), arena_->after.begin() + first, arena_->after.begin() + last);
  }
  if (next_.empty()) return false;
  take_next();
  return true;
}

const std::vector<std::pair<char32_t, char32_t>>& GrammarMatcher::loop_chars() {
  loop_.clear();
  if (pending_ != 0) return loop_;
  arena_->visits = 0;
  // The code points cut where any top's class begins or ends; in each piece every character
  // has the same tops taking it, so the same successors.
  std::vector<std::int32_t> tops;
  std::vector<char32_t> cuts;
  for (const std::int32_t h : heads_) {
    if (h == kEmpty) continue;
    const GrammarElement& e = grammar_->elements[static_cast<std::size_t>(arena_->nodes[static_cast<std::size_t>(h)].pos)];
    if (e.type != Type::kChars) continue;
    tops.push_back(h);
    for (const auto& [lo, hi] : grammar_->char_sets[static_cast<std::size_t>(e.value)]) {
      cuts.push_back(lo);
      cuts.push_back(hi + 1);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<std::int32_t> next;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    next.clear();
    for (const std::int32_t h : tops) {
      const GrammarElement& e = grammar_->elements[static_cast<std::size_t>(arena_->nodes[static_cast<std::size_t>(h)].pos)];
      if (!grammar_->in_set(e.value, cuts[i])) continue;
      const auto [first, last] = successors(h);
      next.insert(next.end(), arena_->after.begin() + first, arena_->after.begin() + last);
    }
    if (next.empty()) continue;
    sort_unique(next);
    if (next != heads_) continue;
    if (!loop_.empty() && loop_.back().second + 1 == cuts[i]) {
      loop_.back().second = cuts[i + 1] - 1;
    } else {
      loop_.emplace_back(cuts[i], cuts[i + 1] - 1);
    }
  }
  return loop_;
}

bool GrammarMatcher::any_top_meets(char32_t lo, char32_t hi) const {
  for (const std::int32_t h : heads_) {
    if (h == kEmpty) continue;
    const GrammarElement& e = grammar_->elements[static_cast<std::size_t>(arena_->nodes[static_cast<std::size_t>(h)].pos)];
    if (e.type == Type::kChars && grammar_->meets_set(e.value, lo, hi)) return true;
  }
  return false;
}

bool GrammarMatcher::feed(unsigned char byte) {
  char32_t bits = 0;
  int left = 0;
  if (pending_ == 0) {
    if (byte >= 0x80) {
      if (byte >= 0xC2 && byte <= 0xDF) {
        length_ = 2, bits = byte & 0x1F;
      } else if (byte >= 0xE0 && byte <= 0xEF) {
        length_ = 3, bits = byte & 0x0F;
      } else if (byte >= 0xF0 && byte <= 0xF4) {
        length_ = 4, bits = byte & 0x07;
      } else {
        return false;
      }
      left = length_ - 1;
    } else {
      bits = byte;
    }
  } else {
    if ((byte & 0xC0) != 0x80) return false;
    bits = (partial_ << 6) | (byte & 0x3F);
    left = pending_ - 1;
  }
  if (left > 0 || pending_ > 0) {
    char32_t lo = 0, hi = 0;
    if (!reachable(bits, left, length_, lo, hi)) return false;
    if (left > 0) {
      if (!any_top_meets(lo, hi)) return false;
      partial_ = bits;
      pending_ = left;
      return true;
    }
  }
  const char32_t c = bits;
  if (!advance([&](const GrammarElement& e) { return e.type == Type::kChars && grammar_->in_set(e.value, c); })) return false;
  pending_ = 0;
  return true;
}

bool GrammarMatcher::feed_token(std::int64_t id) {
  if (pending_ != 0) return false;
  return advance([&](const GrammarElement& e) {
    return (e.type == Type::kToken && e.value == id) || (e.type == Type::kNotToken && e.value != id);
  });
}

void GrammarMatcher::absorb(const GrammarMatcher& other) {
  heads_.insert(heads_.end(), other.heads_.begin(), other.heads_.end());
  sort_unique(heads_);
}

void GrammarMatcher::next_tokens(std::vector<std::int64_t>& token, std::vector<std::int64_t>& not_token) const {
  token.clear();
  not_token.clear();
  if (pending_ != 0) return;
  for (const std::int32_t h : heads_) {
    if (h == kEmpty) continue;
    const GrammarElement& e = grammar_->elements[static_cast<std::size_t>(arena_->nodes[static_cast<std::size_t>(h)].pos)];
    if (e.type == Type::kToken) token.push_back(e.value);
    if (e.type == Type::kNotToken) not_token.push_back(e.value);
  }
  for (auto* v : {&token, &not_token}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
}

}  // namespace staticlm
