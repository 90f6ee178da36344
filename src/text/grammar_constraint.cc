#include "text/grammar_constraint.h"

#include <algorithm>

#include "base/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "text/vocabulary_walk.h"

namespace staticlm {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar, const TokenIndex& index,
                                     std::vector<std::int64_t> end_ids)
    : index_(index), end_ids_(std::move(end_ids)), matcher_(std::move(grammar)) {}

void GrammarConstraint::allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) {
  start_mask(end_ids_, matcher_.complete(), vocab, allowed);
  if (matcher_.finished()) return;
  // A token of characters that leave the readings as they are (inside a string, a word) is
  // allowed without feeding it: most of the vocabulary, where a grammar loops over a class.
  const auto& loop = matcher_.loop_chars();
  allow_taken_tokens(index_, matcher_, states_, vocab, allowed, [&](std::size_t, std::string_view b) {
    if (loop.empty()) return false;
    for (std::size_t i = 0; i < b.size();) {
      const auto lead = static_cast<unsigned char>(b[i]);
      const auto len = static_cast<std::size_t>(utf8_sequence_length(lead));
      if (i + len > b.size() || (lead >= 0x80 && !is_valid_utf8(b.substr(i, len)))) return false;
      const char32_t c = utf8_decode(b, i);
      auto it = std::lower_bound(loop.begin(), loop.end(), c, [](const std::pair<char32_t, char32_t>& r, char32_t v) { return r.second < v; });
      if (it == loop.end() || it->first > c) return false;
    }
    return true;
  });
  if (!matcher_.grammar().has_tokens) return;
  matcher_.next_tokens(tokens_, not_tokens_);
  for (std::int64_t t : tokens_) {
    if (t < vocab) allowed[static_cast<std::size_t>(t)] = 1;
  }
  // !<a> takes any token but a; with !<b> beside it, any token. The end tokens are left to
  // complete() (llama.cpp's rule too), so a text ends only where the grammar allows it.
  if (!not_tokens_.empty()) {
    for (std::int64_t t = 0; t < vocab; ++t) {
      if (not_tokens_.size() == 1 && t == not_tokens_[0]) continue;
      if (std::find(end_ids_.begin(), end_ids_.end(), t) != end_ids_.end()) continue;
      allowed[static_cast<std::size_t>(t)] = 1;
    }
  }
}

void GrammarConstraint::accept(std::int64_t token) {
  bool is_end = false;
  const std::string* b = token_text(index_, end_ids_, token, is_end);
  if (is_end) return;
  GrammarMatcher as_text = matcher_;
  bool text_ok = b && !b->empty();
  for (std::size_t i = 0; text_ok && i < b->size(); ++i) text_ok = as_text.feed(static_cast<unsigned char>((*b)[i]));
  const bool token_ok = matcher_.grammar().has_tokens && matcher_.feed_token(token);
  if (text_ok && token_ok) {
    matcher_.absorb(as_text);
  } else if (text_ok) {
    matcher_ = std::move(as_text);
  } else if (!token_ok) {
    invalid_argument("grammar constraint: token " + std::to_string(token) + " does not continue a text the grammar allows");
  }
}

Grammar parse_grammar(std::string_view text, const std::string& what, const Tokenizer* tokenizer, std::int64_t vocab) {
  Grammar::TokenLookup lookup;
  if (tokenizer) {
    // As llama.cpp: the text must encode to exactly one token (special tokens included).
    lookup = [tokenizer](std::string_view t) -> std::optional<std::int64_t> {
      const std::vector<int> ids = tokenizer->encode(t, false);
      if (ids.size() != 1) return std::nullopt;
      return ids[0];
    };
  }
  return Grammar::parse(text, what, lookup, tokenizer ? vocab : 0);
}

TokenConstraintFactory grammar_constraint_factory(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                                                  std::vector<std::int64_t> end_ids) {
  return [grammar = std::move(grammar), &tokenizer, end_ids = std::move(end_ids)]() -> std::unique_ptr<TokenConstraint> {
    return std::make_unique<GrammarConstraint>(grammar, tokenizer.token_index(), end_ids);
  };
}

}  // namespace staticlm
