// Constrained generation by a GBNF grammar: a TokenConstraint that allows the tokens whose bytes
// continue a text the grammar allows (or that a token element takes), and the end tokens once
// the text is whole (and nothing else then).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "runtime/token_constraint.h"
#include "text/grammar_matcher.h"
#include "text/token_index.h"

namespace staticlm {

class Tokenizer;

class GrammarConstraint : public TokenConstraint {
 public:
  // `index` must outlive the constraint.
  GrammarConstraint(std::shared_ptr<const Grammar> grammar, const TokenIndex& index, std::vector<std::int64_t> end_ids);
  void allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) override;
  void accept(std::int64_t token) override;
  bool done() const override { return matcher_.finished(); }

 private:
  const TokenIndex& index_;
  std::vector<std::int64_t> end_ids_;
  GrammarMatcher matcher_;
  std::vector<GrammarMatcher> states_;  // scratch for the vocabulary walk
  std::vector<std::int64_t> tokens_, not_tokens_;
};

// Grammar::parse with the token forms read by `tokenizer` (null: refused) over `vocab` ids.
Grammar parse_grammar(std::string_view text, const std::string& what, const Tokenizer* tokenizer, std::int64_t vocab);

// A fresh GrammarConstraint per generation over `tokenizer`'s vocabulary (which must outlive the
// factory), ended by `end_ids`.
TokenConstraintFactory grammar_constraint_factory(std::shared_ptr<const Grammar> grammar, const Tokenizer& tokenizer,
                                                  std::vector<std::int64_t> end_ids);

}  // namespace staticlm
