#include "text/json_pattern.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>

#include "base/error.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace staticlm {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

using Ranges = std::vector<std::pair<char32_t, char32_t>>;

// Sorted, merged.
Ranges normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, x.second);
    } else {
      out.push_back(x);
    }
  }
  return out;
}

Ranges complement(const Ranges& r) {
  Ranges out;
  char32_t next = 0;
  for (const auto& x : normalized(r)) {
    if (x.first > next) out.emplace_back(next, x.first - 1);
    next = x.second + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

// ECMA-262's \d, \w and \s (WhiteSpace and LineTerminator).
const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{0x09, 0x0D}, {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.`: anything but a line terminator.
const Ranges kDot = complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});

// The pattern as a tree.
struct Ast {
  enum class Kind { kClass, kConcat, kAlternation, kRepeat } kind;
  Ranges ranges;                            // kClass
  std::vector<std::unique_ptr<Ast>> parts;  // kConcat, kAlternation; kRepeat: one
  int min = 0, max = -1;                    // kRepeat; max -1: no limit
};

std::unique_ptr<Ast> make(Ast::Kind kind) {
  auto a = std::make_unique<Ast>();
  a->kind = kind;
  return a;
}

std::unique_ptr<Ast> make_class(Ranges r) {
  auto a = make(Ast::Kind::kClass);
  a->ranges = normalized(std::move(r));
  return a;
}

std::unique_ptr<Ast> make_repeat(std::unique_ptr<Ast> x, int min, int max) {
  auto a = make(Ast::Kind::kRepeat);
  a->parts.push_back(std::move(x));
  a->min = min, a->max = max;
  return a;
}

// Counted repeats above this are refused (they could not fit kMaxPositions anyway, unless
// empty, and an empty group repeated a billion times would cost time for nothing).
constexpr int kMaxCount = 1000;
// Groups within groups (the parser and the tree recurse once per level).
constexpr int kMaxGroupDepth = 64;

class Parser {
 public:
  Parser(std::string_view pattern, std::string what) : what_(std::move(what)) {
    if (!is_valid_utf8(pattern)) fail("the pattern is not valid UTF-8");
    for (std::size_t i = 0; i < pattern.size();) cps_.push_back(utf8_decode(pattern, i));
  }

  // The top level: alternatives, each searched anywhere unless anchored by ^ / $.
  std::unique_ptr<Ast> top() {
    auto alt = make(Ast::Kind::kAlternation);
    for (;;) {
      const bool anchored_start = eat('^');
      auto body = concat(true);
      const bool anchored_end = eat('$');
      if (!at_end() && peek() == ')') fail_here("unmatched ')'");
      auto seq = make(Ast::Kind::kConcat);
      if (!anchored_start) seq->parts.push_back(make_repeat(make_class({{0, kMaxCodePoint}}), 0, -1));
      seq->parts.push_back(std::move(body));
      if (!anchored_end) seq->parts.push_back(make_repeat(make_class({{0, kMaxCodePoint}}), 0, -1));
      alt->parts.push_back(std::move(seq));
      if (!eat('|')) break;
    }
    if (!at_end()) fail_here("unmatched ')'");
    return alt;
  }

 private:
  [[noreturn]] void fail(const std::string& m) const { invalid_argument(what_ + ": " + m); }
  [[noreturn]] void fail_here(const std::string& m) const {
    fail(m + " (at character " + std::to_string(pos_ + 1) + ")");
  }
  bool at_end() const { return pos_ >= cps_.size(); }
  char32_t peek(std::size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0; }
  bool eat(char32_t c) {
    if (at_end() || cps_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  std::unique_ptr<Ast> alternation() {
    auto alt = make(Ast::Kind::kAlternation);
    do {
      alt->parts.push_back(concat(false));
    } while (eat('|'));
    return alt;
  }

  // Items up to '|', ')' or the end; at the top level a '$' that ends the alternative too.
  std::unique_ptr<Ast> concat(bool top) {
    auto seq = make(Ast::Kind::kConcat);
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && top && (pos_ + 1 == cps_.size() || peek(1) == '|')) break;
      auto atom_ast = atom();
      seq->parts.push_back(quantified(std::move(atom_ast)));
    }
    return seq;
  }

  // Reads a decimal count, or returns -1 (leaving pos_) when there is none.
  int count() {
    const std::size_t start = pos_;
    long long v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = std::min<long long>(v * 10 + (peek() - '0'), 1LL << 40);
      ++pos_;
    }
    if (pos_ == start) return -1;
    if (v > kMaxCount) fail_here("repeat counts above " + std::to_string(kMaxCount) + " are not supported");
    return static_cast<int>(v);
  }

  std::unique_ptr<Ast> quantified(std::unique_ptr<Ast> x) {
    for (;;) {
      int min = 0, max = -1;
      if (eat('*')) {
      } else if (eat('+')) {
        min = 1;
      } else if (eat('?')) {
        max = 1;
      } else if (peek() == '{') {
        // {n}, {n,}, {n,m}; anything else is a literal '{' (ECMA-262 Annex B).
        const std::size_t open = pos_++;
        min = count();
        if (min < 0) {
          pos_ = open;
          return x;
        }
        max = min;
        if (eat(',')) max = count();
        if (!eat('}')) {
          pos_ = open;
          return x;
        }
        if (max >= 0 && max < min) fail_here("a repeat {n,m} with m below n");
      } else {
        return x;
      }
      eat('?');  // lazy: the same strings match
      if (peek() == '*' || peek() == '+' || peek() == '?') fail_here("nothing to repeat");
      x = make_repeat(std::move(x), min, max);
    }
  }

  std::unique_ptr<Ast> atom() {
    const char32_t c = peek();
    if (c == '*' || c == '+' || c == '?') fail_here("nothing to repeat");
    if (c == '^' || c == '$') fail_here("'^' and '$' are supported only at the start and end of the pattern");
    ++pos_;
    if (c == '(') {
      if (++depth_ > kMaxGroupDepth) fail_here("groups nested more than " + std::to_string(kMaxGroupDepth) + " deep");
      if (eat('?')) {
        if (eat(':')) {
        } else if (peek() == '<' && peek(1) != '=' && peek(1) != '!') {
          while (!at_end() && peek() != '>') ++pos_;  // a named group: the name does not matter here
          if (!eat('>')) fail_here("an unterminated group name");
        } else {
          fail_here("lookahead and lookbehind are not supported (they could not be enforced while generating)");
        }
      }
      auto inner = alternation();
      if (!eat(')')) fail_here("a missing ')'");
      --depth_;
      return inner;
    }
    if (c == ')') fail_here("unmatched ')'");
    if (c == '[') return char_class();
    if (c == '.') return make_class(kDot);
    if (c == '\\') return make_class(escape(false));
    return make_class({{c, c}});
  }

  // After a '\': the class it stands for (one character for most).
  Ranges escape(bool in_class) {
    if (at_end()) fail_here("a '\\' at the end of the pattern");
    const char32_t c = cps_[pos_++];
    const auto one = [](char32_t x) { return Ranges{{x, x}}; };
    switch (c) {
      case 'd': return kDigit;
      case 'D': return complement(kDigit);
      case 'w': return kWord;
      case 'W': return complement(kWord);
      case 's': return kSpace;
      case 'S': return complement(kSpace);
      case 't': return one('\t');
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case '0':
        if (peek() >= '0' && peek() <= '9') fail_here("octal escapes are not supported");
        return one(0);
      case 'b':
        if (in_class) return one('\b');
        fail_here("word boundaries (\\b) are not supported");
      case 'B': fail_here("word boundaries (\\B) are not supported");
      case 'x': return one(hex(2));
      case 'u': {
        char32_t v = hex(4);
        // A surrogate pair written as two escapes is one character.
        if (v >= 0xD800 && v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          const std::size_t back = pos_;
          pos_ += 2;
          const char32_t low = hex(4);
          if (low >= 0xDC00 && low <= 0xDFFF) return one(0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00));
          pos_ = back;
        }
        return one(v);
      }
      case 'c': {
        const char32_t l = peek();
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z'))) fail_here("expected a letter after \\c");
        ++pos_;
        return one(l % 32);
      }
      case 'p': return property();
      case 'P': return complement(property());
      case 'k': fail_here("backreferences are not supported (they could not be enforced while generating)");
      default: break;
    }
    if (c >= '1' && c <= '9') fail_here("backreferences are not supported (they could not be enforced while generating)");
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
      fail_here("unknown escape '\\" + std::string(1, static_cast<char>(c)) + "'");
    }
    return one(c);  // escaped punctuation (or any other character) stands for itself
  }

  // After \p or \P: {Name}, {gc=Value} / {General_Category=Value}, {sc=Value} / {Script=Value},
  // as ECMA-262 (the u flag) spells them; the code points from Unicode's tables.
  Ranges property() {
    if (!eat('{')) fail_here("expected '{' after \\p");
    std::string name;
    while (!at_end() && peek() != '}') name.push_back(static_cast<char>(std::min<char32_t>(cps_[pos_++], 0x7F)));
    if (!eat('}')) fail_here("a missing '}' after \\p{");
    const std::string written = name;
    for (const char* prefix : {"General_Category=", "gc=", "Script=", "sc="}) {
      if (name.rfind(prefix, 0) == 0) name.erase(0, std::char_traits<char>::length(prefix));
    }
    if (written.rfind("Script_Extensions=", 0) == 0 || written.rfind("scx=", 0) == 0) {
      fail_here("\\p{" + written + "}: Script_Extensions is not supported");
    }
    // ECMA-262 names are case-sensitive, start upper-case and hold letters, digits and '_'
    // (Oniguruma would also take "letter" and its POSIX classes such as Alnum).
    static const char* const kNotEcma[] = {"Alnum", "Blank", "Cntrl", "Digit", "Graph", "Lower", "Print", "Punct",
                                           "Space", "Upper", "XDigit", "Word", "Newline"};
    bool ecma = !name.empty() && name[0] >= 'A' && name[0] <= 'Z' &&
                std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    for (const char* x : kNotEcma) ecma = ecma && name != x;
    Ranges r = ecma ? unicode_property_ranges(name) : Ranges{};
    if (r.empty()) fail_here("unknown Unicode property \\p{" + written + "}");
    return r;
  }

  char32_t hex(int digits) {
    char32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char32_t h = peek();
      const int d = h >= '0' && h <= '9' ? static_cast<int>(h - '0')
                    : h >= 'a' && h <= 'f' ? static_cast<int>(h - 'a' + 10)
                    : h >= 'A' && h <= 'F' ? static_cast<int>(h - 'A' + 10)
                                           : -1;
      if (d < 0) fail_here("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<char32_t>(d);
      ++pos_;
    }
    return v;
  }

  // After '[': items up to ']'.
  std::unique_ptr<Ast> char_class() {
    const bool negated = eat('^');
    Ranges r;
    for (;;) {
      if (at_end()) fail_here("a missing ']'");
      if (peek() == ']') {
        ++pos_;
        break;
      }
      Ranges lo = class_atom();
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < cps_.size()) {
        ++pos_;
        Ranges hi = class_atom();
        if (lo.size() != 1 || lo[0].first != lo[0].second || hi.size() != 1 || hi[0].first != hi[0].second) {
          // [\d-z]: the '-' is a literal (Annex B).
          r.insert(r.end(), lo.begin(), lo.end());
          r.emplace_back('-', '-');
          r.insert(r.end(), hi.begin(), hi.end());
          continue;
        }
        if (hi[0].first < lo[0].first) fail_here("a class range out of order");
        r.emplace_back(lo[0].first, hi[0].first);
        continue;
      }
      r.insert(r.end(), lo.begin(), lo.end());
    }
    return make_class(negated ? complement(r) : r);
  }

  Ranges class_atom() {
    const char32_t c = cps_[pos_++];
    if (c == '\\') return escape(true);
    return {{c, c}};
  }

  std::string what_;
  std::vector<char32_t> cps_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

void set(JsonPattern::State& s, int p) { s[static_cast<std::size_t>(p / 64)] |= std::uint64_t{1} << (p % 64); }
void merge(JsonPattern::State& into, const JsonPattern::State& s) {
  for (std::size_t i = 0; i < into.size(); ++i) into[i] |= s[i];
}
bool any(const JsonPattern::State& s) {
  return std::any_of(s.begin(), s.end(), [](std::uint64_t w) { return w != 0; });
}
bool test_bit(const JsonPattern::State& s, int p) { return (s[static_cast<std::size_t>(p / 64)] >> (p % 64)) & 1; }
template <typename F>
void each(const JsonPattern::State& s, F f) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    for (std::uint64_t w = s[i]; w != 0; w &= w - 1) f(static_cast<int>(i * 64) + __builtin_ctzll(w));
  }
}

}  // namespace

// Glushkov's construction: every class in the tree (counted repeats written out) is a
// position; first / last: the positions a match can start / end with; follow: which may come
// next.
class JsonPatternBuilder {
 public:
  struct Info {
    JsonPattern::State first{}, last{};
    bool nullable = true;
  };

  JsonPatternBuilder(JsonPattern& p, std::string what) : p_(p), what_(std::move(what)) {}

  Info build(const Ast& a) {
    // Bounds the work of empty groups repeated many times.
    if (++steps_ > 200000) invalid_argument(what_ + ": the pattern is too large to enforce");
    Info r;
    switch (a.kind) {
      case Ast::Kind::kClass: {
        const int pos = static_cast<int>(p_.positions_.size());
        if (pos >= JsonPattern::kMaxPositions) {
          invalid_argument(what_ + ": the pattern is too large to enforce (more than " +
                           std::to_string(JsonPattern::kMaxPositions - 1) +
                           " character positions once its counted repeats are written out)");
        }
        JsonPattern::Position position;
        for (const auto& [lo, hi] : a.ranges) position.ranges.push_back({lo, hi});
        p_.positions_.push_back(std::move(position));
        set(r.first, pos);
        set(r.last, pos);
        r.nullable = false;
        return r;
      }
      case Ast::Kind::kConcat:
        for (const auto& part : a.parts) r = then(r, build(*part));
        return r;
      case Ast::Kind::kAlternation:
        r.nullable = false;
        for (const auto& part : a.parts) {
          const Info x = build(*part);
          merge(r.first, x.first);
          merge(r.last, x.last);
          r.nullable = r.nullable || x.nullable;
        }
        if (a.parts.empty()) r.nullable = true;
        return r;
      case Ast::Kind::kRepeat: {
        const Ast& x = *a.parts[0];
        for (int i = 0; i < a.min; ++i) r = then(r, build(x));
        if (a.max < 0) {
          Info star = build(x);
          each(star.last, [&](int q) { merge(p_.positions_[static_cast<std::size_t>(q)].follow, star.first); });
          star.nullable = true;
          r = then(r, star);
        } else {
          for (int i = a.min; i < a.max; ++i) {
            Info opt = build(x);
            opt.nullable = true;
            r = then(r, opt);
          }
        }
        return r;
      }
    }
    return r;
  }

 private:
  // a then b.
  Info then(const Info& a, const Info& b) {
    each(a.last, [&](int q) { merge(p_.positions_[static_cast<std::size_t>(q)].follow, b.first); });
    Info r;
    r.first = a.first;
    if (a.nullable) merge(r.first, b.first);
    r.last = b.last;
    if (b.nullable) merge(r.last, a.last);
    r.nullable = a.nullable && b.nullable;
    return r;
  }

  JsonPattern& p_;
  std::string what_;
  long steps_ = 0;
};

JsonPattern JsonPattern::compile(std::string_view pattern, const std::string& what) {
  Parser parser(pattern, what);
  const std::unique_ptr<Ast> tree = parser.top();
  JsonPattern p;
  p.positions_.emplace_back();  // the start
  JsonPatternBuilder builder(p, what);
  const JsonPatternBuilder::Info info = builder.build(*tree);
  p.positions_[0].follow = info.first;
  p.last_ = info.last;
  if (info.nullable) set(p.last_, 0);
  p.measure();
  return p;
}

void JsonPattern::keep_only(const std::vector<std::pair<char32_t, char32_t>>& allowed) {
  for (Position& p : positions_) {
    std::vector<Range> kept;
    for (const Range& r : p.ranges) {
      for (const auto& [lo, hi] : allowed) {
        const char32_t a = std::max(r.lo, lo), b = std::min(r.hi, hi);
        if (a <= b) kept.push_back({a, b});
      }
    }
    p.ranges = std::move(kept);
  }
  measure();
}

void JsonPattern::measure() {
  lengths_cap_ = -1;
  lengths_.clear();
  const auto n = positions_.size();
  const auto at = [](int q) { return static_cast<std::size_t>(q); };
  // Fewest: shortest paths to an accepting position (relaxed until nothing changes).
  fewest_.assign(n, -1);
  each(last_, [&](int q) {
    if (q == 0 || !positions_[at(q)].ranges.empty()) fewest_[at(q)] = 0;
  });
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t p = 0; p < n; ++p) {
      each(positions_[p].follow, [&](int q) {
        // A class no character is in ([]) is never entered.
        if (positions_[at(q)].ranges.empty()) return;
        if (fewest_[at(q)] >= 0 && (fewest_[p] < 0 || fewest_[at(q)] + 1 < fewest_[p])) {
          fewest_[p] = fewest_[at(q)] + 1;
          changed = true;
        }
      });
    }
  }
  // Most: longest paths through positions that can still match; unbounded on a loop among them.
  most_.assign(n, -1);
  std::vector<int> mark(n, 0);  // 0 new, 1 on the path, 2 done
  const auto visit = [&](auto&& self, std::size_t p) -> void {
    mark[p] = 1;
    std::int64_t best = test_bit(last_, static_cast<int>(p)) ? 0 : -1;
    each(positions_[p].follow, [&](int q) {
      if (fewest_[at(q)] < 0) return;
      if (mark[at(q)] == 1) best = INT64_MAX;
      if (mark[at(q)] == 0) self(self, at(q));
      if (most_[at(q)] >= 0) best = std::max(best, most_[at(q)] == INT64_MAX ? INT64_MAX : most_[at(q)] + 1);
    });
    most_[p] = fewest_[p] < 0 ? -1 : best;
    mark[p] = 2;
  };
  for (std::size_t p = 0; p < n; ++p) {
    if (mark[p] == 0) visit(visit, p);
  }
}

void JsonPattern::measure_lengths(std::int64_t cap) {
  if (cap <= lengths_cap_) return;
  const auto n = positions_.size();
  const auto words = static_cast<std::size_t>(cap / 64 + 1);
  lengths_.assign(n, std::vector<std::uint64_t>(words, 0));
  // ends: the positions from which exactly k more characters can end in a match.
  State ends{};
  each(last_, [&](int q) {
    if (q == 0 || !positions_[static_cast<std::size_t>(q)].ranges.empty()) ends[static_cast<std::size_t>(q / 64)] |= std::uint64_t{1} << (q % 64);
  });
  State enterable{};  // a class no character is in ([]) is never entered
  for (std::size_t q = 1; q < n; ++q) {
    if (!positions_[q].ranges.empty()) enterable[q / 64] |= std::uint64_t{1} << (q % 64);
  }
  for (std::int64_t k = 0;; ++k) {
    each(ends, [&](int q) { lengths_[static_cast<std::size_t>(q)][static_cast<std::size_t>(k / 64)] |= std::uint64_t{1} << (k % 64); });
    if (k == cap) break;
    State next{};
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t w = 0; w < next.size(); ++w) {
        if (positions_[p].follow[w] & ends[w] & enterable[w]) {
          next[p / 64] |= std::uint64_t{1} << (p % 64);
          break;
        }
      }
    }
    ends = next;
  }
  lengths_cap_ = cap;
}

bool JsonPattern::position_can_match(int q, std::int64_t at_least, std::int64_t at_most) const {
  const auto at = static_cast<std::size_t>(q);
  const std::int64_t fewest = fewest_[at], most = most_[at];
  at_least = std::max<std::int64_t>(at_least, 0);
  if (fewest < 0 || fewest > at_most || most < at_least) return false;
  // The fewest and a finite most are lengths of matches; an unbounded most means matches
  // longer than any bound.
  if (fewest >= at_least || (most != INT64_MAX && most <= at_most) || at_most == INT64_MAX) return true;
  if (at_most > lengths_cap_) return true;  // not measured this far: as the fewest and the most say
  // Any bit of [at_least, at_most], a 64-bit word at a time.
  const std::vector<std::uint64_t>& bits = lengths_[at];
  for (std::int64_t w = at_least / 64; w <= at_most / 64; ++w) {
    std::uint64_t word = bits[static_cast<std::size_t>(w)];
    if (w == at_least / 64) word &= ~std::uint64_t{0} << (at_least % 64);
    if (w == at_most / 64 && at_most % 64 != 63) word &= (std::uint64_t{1} << (at_most % 64 + 1)) - 1;
    if (word != 0) return true;
  }
  return false;
}

bool JsonPattern::can_match(const State& state, std::int64_t at_least, std::int64_t at_most) const {
  bool found = false;
  each(state, [&](int q) { found = found || position_can_match(q, at_least, at_most); });
  return found;
}

std::int64_t JsonPattern::fewest_to_match(const State& state) const {
  std::int64_t best = -1;
  each(state, [&](int q) {
    const std::int64_t f = fewest_[static_cast<std::size_t>(q)];
    if (f >= 0 && (best < 0 || f < best)) best = f;
  });
  return best;
}

bool JsonPattern::step(State& state, char32_t c) const {
  State next{};
  each(state, [&](int q) { merge(next, positions_[static_cast<std::size_t>(q)].follow); });
  each(next, [&](int q) {
    const auto& r = positions_[static_cast<std::size_t>(q)].ranges;
    const auto it = std::upper_bound(r.begin(), r.end(), c, [](char32_t v, const Range& x) { return v < x.lo; });
    if (it == r.begin() || std::prev(it)->hi < c) next[static_cast<std::size_t>(q / 64)] &= ~(std::uint64_t{1} << (q % 64));
  });
  state = next;
  return any(state);
}

bool JsonPattern::may_step(const State& state, char32_t lo, char32_t hi, std::int64_t at_most,
                           std::int64_t at_least) const {
  State next{};
  each(state, [&](int q) { merge(next, positions_[static_cast<std::size_t>(q)].follow); });
  bool found = false;
  each(next, [&](int q) {
    const auto at = static_cast<std::size_t>(q);
    if (found || !position_can_match(q, at_least, at_most)) return;
    // The first range that ends at or after lo overlaps [lo, hi] when it starts by hi.
    const auto& r = positions_[at].ranges;
    const auto it = std::lower_bound(r.begin(), r.end(), lo, [](const Range& x, char32_t v) { return x.hi < v; });
    found = it != r.end() && it->lo <= hi;
  });
  return found;
}

bool JsonPattern::accepts(const State& state) const {
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (state[i] & last_[i]) return true;
  }
  return false;
}

bool JsonPattern::matches(std::string_view text) const {
  State s = start();
  for (std::size_t i = 0; i < text.size();) {
    if (!step(s, utf8_decode(text, i))) return false;
  }
  return accepts(s);
}

}  // namespace staticlm
