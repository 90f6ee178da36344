#include "text/gbnf.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "base/error.h"
#include "text/utf8.h"

namespace staticlm {

namespace {

using Ranges = std::vector<std::pair<char32_t, char32_t>>;
using Sequence = std::vector<GrammarElement>;
using Alternatives = std::vector<Sequence>;
constexpr char32_t kMaxCodePoint = 0x10FFFF;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Sorted, merged; the complement over all code points where negated.
Ranges normalized(Ranges r, bool negated) {
  std::sort(r.begin(), r.end());
  Ranges merged;
  for (const auto& [lo, hi] : r) {
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  if (!negated) return merged;
  Ranges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : merged) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& what, const Grammar::TokenLookup& tokens, std::int64_t vocab)
      : s_(text), what_(what), tokens_(tokens), vocab_(vocab) {}

  Grammar run() {
    skip_space(true);
    while (pos_ < s_.size()) rule();
    for (std::size_t r = 0; r < rules_.size(); ++r) {
      if (!defined_[r]) fail(used_at_[r], "rule '" + names_[r] + "' is used but never defined");
    }
    const auto root = ids_.find("root");
    if (root == ids_.end()) fail(s_.size(), "no rule named 'root' (the text the grammar allows starts at root)");
    check_left_recursion();
    keep_productive_alternatives(root->second);
    Grammar g;
    g.root = root->second;
    g.names = names_;
    g.char_sets = std::move(sets_);
    g.alternatives.resize(rules_.size());
    for (std::size_t r = 0; r < rules_.size(); ++r) {
      for (const Sequence& seq : rules_[r]) {
        g.alternatives[r].push_back(static_cast<std::int32_t>(g.elements.size()));
        for (const GrammarElement& e : seq) {
          g.has_tokens |= e.type == GrammarElement::Type::kToken || e.type == GrammarElement::Type::kNotToken;
          g.elements.push_back(e);
        }
        g.elements.push_back({GrammarElement::Type::kEnd, 0});
      }
    }
    return g;
  }

 private:
  [[noreturn]] void fail(std::size_t at, const std::string& message) const {
    at = std::min(at, s_.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (s_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    invalid_argument(what_ + ": line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message);
  }

  char at(std::size_t i) const { return i < s_.size() ? s_[i] : '\0'; }

  void skip_space(bool newlines) {
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < s_.size() && s_[pos_] != '\n' && s_[pos_] != '\r') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string name() {
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  std::int32_t rule_id(const std::string& name, std::size_t used_at) {
    const auto [it, added] = ids_.emplace(name, static_cast<std::int32_t>(rules_.size()));
    if (added) add_rule(name, used_at);
    return it->second;
  }

  std::int32_t add_rule(const std::string& name, std::size_t used_at) {
    rules_.emplace_back();
    names_.push_back(name);
    defined_.push_back(0);
    used_at_.push_back(used_at);
    return static_cast<std::int32_t>(rules_.size() - 1);
  }

  // A rule standing in for a group or a repeat inside `parent`.
  std::int32_t made_rule(const std::string& parent, Alternatives alts) {
    const std::int32_t id = add_rule(parent + "_" + std::to_string(rules_.size()), pos_);
    defined_[static_cast<std::size_t>(id)] = 1;
    count(1);
    for (const Sequence& s : alts) count(s.size() + 1);
    rules_[static_cast<std::size_t>(id)] = std::move(alts);
    return id;
  }

  void count(std::size_t elements) {
    elements_ += elements;
    if (elements_ > Grammar::kMaxElements) {
      fail(pos_, "the grammar has more than " + std::to_string(Grammar::kMaxElements) + " elements once its repeats are written out");
    }
  }

  void rule() {
    const std::size_t start = pos_;
    const std::string n = name();
    if (n.empty()) fail(pos_, std::string("expected a rule name, found '") + at(pos_) + "'");
    skip_space(false);
    if (s_.substr(pos_, 3) != "::=") fail(pos_, "expected ::= after the rule name '" + n + "'");
    pos_ += 3;
    skip_space(true);
    const std::int32_t id = rule_id(n, start);
    if (defined_[static_cast<std::size_t>(id)]) fail(start, "rule '" + n + "' is defined twice");
    defined_[static_cast<std::size_t>(id)] = 1;
    Alternatives alts = alternates(n, false);
    for (const Sequence& seq : alts) count(seq.size() + 1);
    rules_[static_cast<std::size_t>(id)] = std::move(alts);
    if (pos_ < s_.size()) {
      if (s_[pos_] == '\r') {
        pos_ += at(pos_ + 1) == '\n' ? 2 : 1;
      } else if (s_[pos_] == '\n') {
        ++pos_;
      } else {
        fail(pos_, std::string("expected the end of the line after rule '") + n + "', found '" + s_[pos_] + "'");
      }
    }
    skip_space(true);
  }

  Alternatives alternates(const std::string& rule, bool nested) {
    Alternatives alts;
    alts.push_back(sequence(rule, nested));
    while (at(pos_) == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(sequence(rule, nested));
    }
    return alts;
  }

  // One code point of a literal or a class: an escape or a UTF-8 character.
  char32_t character() {
    if (pos_ >= s_.size()) fail(pos_, "unexpected end of the grammar");
    if (s_[pos_] != '\\') {
      const auto lead = static_cast<unsigned char>(s_[pos_]);
      const std::size_t len = static_cast<std::size_t>(utf8_sequence_length(lead));
      if (!is_valid_utf8(s_.substr(pos_, len)) || pos_ + len > s_.size()) fail(pos_, "the grammar is not valid UTF-8 here");
      return utf8_decode(s_, pos_);
    }
    const char e = at(pos_ + 1);
    int digits = 0;
    switch (e) {
      case 'x': digits = 2; break;
      case 'u': digits = 4; break;
      case 'U': digits = 8; break;
      case 't': pos_ += 2; return '\t';
      case 'r': pos_ += 2; return '\r';
      case 'n': pos_ += 2; return '\n';
      case '\\': case '"': case '[': case ']': pos_ += 2; return static_cast<char32_t>(e);
      default: fail(pos_, std::string("unknown escape '\\") + e + "' (known: \\x \\u \\U \\t \\r \\n \\\\ \\\" \\[ \\])");
    }
    std::uint64_t cp = 0;
    for (int k = 0; k < digits; ++k) {
      const int v = hex_value(at(pos_ + 2 + static_cast<std::size_t>(k)));
      if (v < 0) fail(pos_, std::string("\\") + e + " takes " + std::to_string(digits) + " hex digits");
      cp = cp * 16 + static_cast<std::uint64_t>(v);
    }
    if (cp > kMaxCodePoint) fail(pos_, "code point past U+10FFFF");
    pos_ += 2 + static_cast<std::size_t>(digits);
    return static_cast<char32_t>(cp);
  }

  std::int32_t set_of(Ranges r) {
    const auto [it, added] = set_ids_.emplace(std::move(r), static_cast<std::int32_t>(sets_.size()));
    if (added) sets_.push_back(it->first);
    return it->second;
  }

  GrammarElement chars(Ranges r) { return {GrammarElement::Type::kChars, set_of(std::move(r))}; }

  GrammarElement char_class() {
    const std::size_t start = pos_;
    ++pos_;
    const bool negated = at(pos_) == '^';
    if (negated) ++pos_;
    Ranges r;
    while (pos_ < s_.size() && s_[pos_] != ']') {
      const std::size_t here = pos_;
      const char32_t lo = character();
      char32_t hi = lo;
      if (at(pos_) == '-' && pos_ + 1 < s_.size() && s_[pos_ + 1] != ']') {
        ++pos_;
        hi = character();
        if (hi < lo) fail(here, "the range's end comes before its start");
      }
      r.emplace_back(lo, hi);
    }
    if (pos_ >= s_.size()) fail(start, "a character class '[' that never closes");
    ++pos_;
    return chars(normalized(std::move(r), negated));
  }

  GrammarElement token() {
    const std::size_t start = pos_;
    const bool negated = s_[pos_] == '!';
    if (negated) ++pos_;
    const std::size_t close = s_.find('>', pos_ + 1);
    if (close == std::string_view::npos) fail(start, "a token '<' that never closes with '>'");
    const std::string_view text = s_.substr(pos_ + 1, close - pos_ - 1);
    const std::string shown = "<" + std::string(text) + ">";
    std::int64_t id = -1;
    if (text.size() >= 3 && text.front() == '[' && text.back() == ']') {
      id = 0;
      for (const char c : text.substr(1, text.size() - 2)) {
        if (c < '0' || c > '9' || id > 1'000'000'000) fail(start, "token " + shown + ": expected <[ID]> with a decimal id");
        id = id * 10 + (c - '0');
      }
      if (vocab_ <= 0) fail(start, "token " + shown + " needs the model's tokenizer");
      if (id >= vocab_) fail(start, "token " + shown + " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
    } else {
      if (!tokens_) fail(start, "token " + shown + " needs the model's tokenizer");
      const std::optional<std::int64_t> found = text.empty() ? std::nullopt : tokens_(shown);
      if (!found) fail(start, "token " + shown + " is not one token of the vocabulary");
      id = *found;
    }
    pos_ = close + 1;
    return {negated ? GrammarElement::Type::kNotToken : GrammarElement::Type::kToken, static_cast<std::int32_t>(id)};
  }

  std::int64_t integer() {
    const std::size_t start = pos_;
    std::int64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_] - '0');
      if (v > Grammar::kMaxRepeat) fail(start, "a repeat count past " + std::to_string(Grammar::kMaxRepeat));
      ++pos_;
    }
    return pos_ == start ? -1 : v;
  }

  // Replaces seq[from..] by `min` to `max` (-1: any number of) copies of it.
  void repeat(Sequence& seq, std::size_t from, std::int64_t min, std::int64_t max, const std::string& rule) {
    const Sequence sub(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.end());
    seq.resize(from);
    if (sub.empty()) return;
    for (std::int64_t k = 0; k < min; ++k) {
      count(sub.size());
      seq.insert(seq.end(), sub.begin(), sub.end());
    }
    if (max < 0) {
      // R ::= sub R | (empty): the reference at the end of the alternative keeps the stack flat.
      const std::int32_t id = add_rule(rule + "_" + std::to_string(rules_.size()), pos_);
      defined_[static_cast<std::size_t>(id)] = 1;
      Sequence again = sub;
      again.push_back({GrammarElement::Type::kRule, id});
      count(again.size() + 2);
      rules_[static_cast<std::size_t>(id)] = {again, {}};
      seq.push_back({GrammarElement::Type::kRule, id});
      return;
    }
    // R_k ::= sub R_(k-1) | (empty), nested: at most max - min more, each taken only after the one before.
    std::int32_t inner = -1;
    for (std::int64_t k = min; k < max; ++k) {
      Sequence alt = sub;
      if (inner >= 0) alt.push_back({GrammarElement::Type::kRule, inner});
      inner = made_rule(rule, {alt, {}});
    }
    if (inner >= 0) seq.push_back({GrammarElement::Type::kRule, inner});
  }

  Sequence sequence(const std::string& rule, bool nested) {
    Sequence seq;
    std::size_t last = std::string::npos;  // where the last symbol's elements begin
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      const std::size_t here = pos_;
      if (c == '"') {
        last = seq.size();
        ++pos_;
        while (pos_ < s_.size() && s_[pos_] != '"') {
          const char32_t cp = character();
          count(1);
          seq.push_back(chars({{cp, cp}}));
        }
        if (pos_ >= s_.size()) fail(here, "a string literal that never closes");
        ++pos_;
      } else if (c == '[') {
        last = seq.size();
        count(1);
        seq.push_back(char_class());
      } else if (c == '.') {
        last = seq.size();
        ++pos_;
        count(1);
        seq.push_back(chars({{0, kMaxCodePoint}}));
      } else if (is_name_char(c)) {
        last = seq.size();
        const std::string n = name();
        count(1);
        seq.push_back({GrammarElement::Type::kRule, rule_id(n, here)});
      } else if (c == '(') {
        last = seq.size();
        if (++depth_ > kMaxNesting) fail(here, "groups nested deeper than " + std::to_string(kMaxNesting));
        ++pos_;
        skip_space(true);
        Alternatives alts = alternates(rule, true);
        if (at(pos_) != ')') fail(pos_, std::string("expected ')' to close the group begun at column ") + std::to_string(column_of(here)));
        ++pos_;
        --depth_;
        count(1);
        seq.push_back({GrammarElement::Type::kRule, made_rule(rule, std::move(alts))});
      } else if (c == '<' || (c == '!' && at(pos_ + 1) == '<')) {
        last = seq.size();
        count(1);
        seq.push_back(token());
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last == std::string::npos) fail(here, std::string("'") + c + "' has nothing before it to repeat");
        std::int64_t min = c == '+' ? 1 : 0, max = c == '?' ? 1 : -1;
        ++pos_;
        if (c == '{') {
          skip_space(nested);
          min = std::max<std::int64_t>(integer(), 0);
          skip_space(nested);
          if (at(pos_) == ',') {
            ++pos_;
            skip_space(nested);
            max = integer();
            skip_space(nested);
          } else {
            max = min;
          }
          if (at(pos_) != '}') fail(pos_, "expected '}' to close the repeat {m,n}");
          ++pos_;
          if (max >= 0 && max < min) fail(here, "the repeat's most (" + std::to_string(max) + ") is below its least (" + std::to_string(min) + ")");
        }
        repeat(seq, last, min, max, rule);
      } else {
        break;
      }
      skip_space(nested);
    }
    return seq;
  }

  std::size_t column_of(std::size_t at) const {
    const std::size_t nl = s_.rfind('\n', at == 0 ? 0 : at - 1);
    return nl == std::string_view::npos || at == 0 ? at + 1 : at - nl;
  }

  // A rule that can reach itself before reading a character or a token, with something left to
  // read after it on the way (so each round pushes a frame), never lets a matcher finish
  // expanding it: refused, as llama.cpp does. Rounds that push nothing (("a"?)*: the repeat's
  // rule ends its alternative) come back to a place the matcher has seen and stop there.
  void check_left_recursion() const {
    const std::size_t n = rules_.size();
    std::vector<std::uint8_t> nullable(n, 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Sequence& seq : rules_[r]) {
          const bool all = std::all_of(seq.begin(), seq.end(), [&](const GrammarElement& e) {
            return e.type == GrammarElement::Type::kRule && nullable[static_cast<std::size_t>(e.value)];
          });
          if (all) {
            nullable[r] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    // The rules each rule can begin with; `pushes`: with elements after the reference.
    struct Edge {
      std::int32_t to;
      bool pushes;
    };
    std::vector<std::vector<Edge>> first(n), back(n);
    for (std::size_t r = 0; r < n; ++r) {
      for (const Sequence& seq : rules_[r]) {
        for (std::size_t i = 0; i < seq.size() && seq[i].type == GrammarElement::Type::kRule; ++i) {
          first[r].push_back({seq[i].value, i + 1 < seq.size()});
          back[static_cast<std::size_t>(seq[i].value)].push_back({static_cast<std::int32_t>(r), false});
          if (!nullable[static_cast<std::size_t>(seq[i].value)]) break;
        }
      }
    }
    // Strongly connected components (Kosaraju, without recursion: chains of made rules run
    // deep); an edge that pushes inside one is a round that grows the stack.
    std::vector<std::int32_t> order, component(n, -1);
    std::vector<std::uint8_t> seen(n, 0);
    std::vector<std::pair<std::size_t, std::size_t>> stack;
    for (std::size_t start = 0; start < n; ++start) {
      if (seen[start]) continue;
      seen[start] = 1;
      stack.emplace_back(start, 0);
      while (!stack.empty()) {
        auto& [r, next] = stack.back();
        if (next == first[r].size()) {
          order.push_back(static_cast<std::int32_t>(r));
          stack.pop_back();
          continue;
        }
        const auto to = static_cast<std::size_t>(first[r][next++].to);
        if (!seen[to]) {
          seen[to] = 1;
          stack.emplace_back(to, 0);
        }
      }
    }
    std::vector<std::size_t> todo;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto root = static_cast<std::size_t>(*it);
      if (component[root] >= 0) continue;
      component[root] = *it;
      todo.assign(1, root);
      while (!todo.empty()) {
        const std::size_t r = todo.back();
        todo.pop_back();
        for (const Edge& e : back[r]) {
          const auto from = static_cast<std::size_t>(e.to);
          if (component[from] < 0) {
            component[from] = *it;
            todo.push_back(from);
          }
        }
      }
    }
    for (std::size_t r = 0; r < n; ++r) {
      for (const Edge& e : first[r]) {
        const auto to = static_cast<std::size_t>(e.to);
        if (e.pushes && component[to] == component[r]) {
          fail(used_at_[to], "left recursion: rule '" + names_[to] + "' can reach itself before reading anything");
        }
      }
    }
  }

  // Drops the alternatives that can never end (an empty class [], a rule that never ends): a
  // text begun in one could not be finished, so a generation could reach a place no token
  // continues. Refused when root keeps none.
  void keep_productive_alternatives(std::int32_t root) {
    const std::size_t n = rules_.size();
    std::vector<std::uint8_t> productive(n, 0);
    const auto ends = [&](const Sequence& seq) {
      return std::all_of(seq.begin(), seq.end(), [&](const GrammarElement& e) {
        if (e.type == GrammarElement::Type::kRule) return productive[static_cast<std::size_t>(e.value)] != 0;
        if (e.type == GrammarElement::Type::kChars) return !sets_[static_cast<std::size_t>(e.value)].empty();
        return true;
      });
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t r = 0; r < n; ++r) {
        if (!productive[r] && std::any_of(rules_[r].begin(), rules_[r].end(), ends)) {
          productive[r] = 1;
          changed = true;
        }
      }
    }
    if (!productive[static_cast<std::size_t>(root)]) {
      fail(used_at_[static_cast<std::size_t>(root)],
           "rule 'root' allows no text that ends (each alternative needs an empty class [] or a rule that never ends)");
    }
    for (Alternatives& alts : rules_) {
      alts.erase(std::remove_if(alts.begin(), alts.end(), [&](const Sequence& s) { return !ends(s); }), alts.end());
    }
  }

  std::string_view s_;
  const std::string& what_;
  const Grammar::TokenLookup& tokens_;
  std::int64_t vocab_;
  static constexpr int kMaxNesting = 256;  // the parser recurses once a group
  std::size_t pos_ = 0;
  std::size_t elements_ = 0;
  int depth_ = 0;
  std::vector<Alternatives> rules_;
  std::vector<std::string> names_;
  std::vector<std::uint8_t> defined_;
  std::vector<std::size_t> used_at_;
  std::unordered_map<std::string, std::int32_t> ids_;
  std::map<Ranges, std::int32_t> set_ids_;
  std::vector<Ranges> sets_;
};

}  // namespace

Grammar Grammar::parse(std::string_view text, const std::string& what, const TokenLookup& tokens, std::int64_t vocab) {
  return Parser(text, what, tokens, vocab).run();
}

bool Grammar::in_set(std::int32_t set, char32_t c) const { return meets_set(set, c, c); }

bool Grammar::meets_set(std::int32_t set, char32_t lo, char32_t hi) const {
  const auto& r = char_sets[static_cast<std::size_t>(set)];
  // The first range that ends at or after lo.
  auto it = std::lower_bound(r.begin(), r.end(), lo, [](const std::pair<char32_t, char32_t>& x, char32_t v) { return x.second < v; });
  return it != r.end() && it->first <= hi;
}

}  // namespace staticlm
