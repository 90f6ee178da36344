// Constrained generation of JSON: a TokenConstraint that allows the tokens whose bytes continue
// a valid value of a JsonSchema, and the end tokens once the value is complete (and nothing else
// then). Special tokens are never allowed inside the value.
#pragma once

#include <memory>

#include "runtime/token_constraint.h"
#include "text/json_matcher.h"
#include "text/json_schema.h"
#include "text/token_index.h"

namespace staticlm {

class JsonConstraint : public TokenConstraint {
 public:
  // `index` must outlive the constraint.
  JsonConstraint(std::shared_ptr<const JsonSchema> schema, const TokenIndex& index, std::vector<std::int64_t> end_ids);
  void allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) override;
  void accept(std::int64_t token) override;
  bool done() const override { return matcher_.finished(); }

 private:
  std::shared_ptr<const JsonSchema> schema_;
  const TokenIndex& index_;
  std::vector<std::int64_t> end_ids_;
  JsonMatcher matcher_;
  std::vector<JsonMatcher> states_;  // scratch: states_[d], the matcher after d bytes of a token
};

class Tokenizer;

// A fresh JsonConstraint per generation, over `tokenizer`'s vocabulary (which must outlive the
// factory), ended by `end_ids`.
TokenConstraintFactory json_constraint_factory(std::shared_ptr<const JsonSchema> schema, const Tokenizer& tokenizer,
                                               std::vector<std::int64_t> end_ids);

}  // namespace staticlm
