// Regular expressions for tokenizer.json patterns, on Oniguruma: the engine the `tokenizers`
// library compiles Split and Replace patterns with, so both read a pattern the same way.
// A Regex owns its compiled program; searching is const and safe from several threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace staticlm {

class Regex {
 public:
  // Compiles a pattern with Oniguruma's default syntax and UTF-8. A bad pattern throws
  // kInvalidFile with a message that starts with `what` (for example "tokenizer.json: normalizer").
  static std::unique_ptr<Regex> compile(std::string_view pattern, const std::string& what);
  // A pattern that matches `text` literally (what `tokenizers` does with {"String": ...}, by
  // escaping it). Searched without the regex engine, with the same results.
  static std::unique_ptr<Regex> literal(std::string_view text);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Every match in `text` as [start, end) byte offsets, in order, with the iteration rules of
  // the onig crate: search on from the previous end; an empty match right where the previous
  // match ended is skipped by moving one character on. Clears `out` first.
  void find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const;

 private:
  explicit Regex(void* reg) : reg_(reg) {}
  void* reg_ = nullptr;  // regex_t*, owned; null for a literal
  std::string literal_;
};

// Rust regex `\w` (Unicode): Alphabetic, Mark, Decimal_Number, Connector_Punctuation,
// Join_Control. Used by added tokens with single_word.
bool is_word_char(char32_t c);

// Unicode White_Space (what Rust's char::is_whitespace and regex `\s` test).
bool is_white_space(char32_t c);

// The code points of a Unicode property, from Oniguruma's tables: a General_Category value
// (L, Letter, Lu, Nd, ...), a script (Greek, Grek, Latin, ...) or a binary property
// (Alphabetic, White_Space, Emoji, ASCII, Any, ...), as sorted, disjoint ranges. Empty when
// Oniguruma knows no such name (it ignores case and '_' in names: callers check spelling).
std::vector<std::pair<char32_t, char32_t>> unicode_property_ranges(std::string_view name);

}  // namespace staticlm
