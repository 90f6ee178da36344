// With Gemma 4's thinking on, a constrained reply (a JSON Schema's value) may follow one thought:
// the first token may open a thought channel (<|channel>), anything but an end token then runs
// until the channel closes (<channel|>), and the constraint applies from there as if the reply
// began there. Without the opening token first, the constraint applies from the first token.
// (Forced tool calls write the same allowance into their grammar: tool_call_grammar.h.)
#pragma once

#include <memory>
#include <vector>

#include "runtime/token_constraint.h"

namespace staticlm {

class Tokenizer;

class ThoughtFirstConstraint : public TokenConstraint {
 public:
  ThoughtFirstConstraint(std::unique_ptr<TokenConstraint> then, std::int64_t open, std::int64_t close,
                         std::vector<std::int64_t> end_ids);
  void allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) override;
  void accept(std::int64_t token) override;
  bool done() const override { return state_ == State::kThen && then_->done(); }

 private:
  enum class State { kFirst, kThought, kThen };
  std::unique_ptr<TokenConstraint> then_;
  std::int64_t open_, close_;
  std::vector<std::int64_t> end_ids_;
  State state_ = State::kFirst;
};

// `then` wrapped as above when `tokenizer` has both channel tokens; `then` itself otherwise.
TokenConstraintFactory thought_first_factory(TokenConstraintFactory then, const Tokenizer& tokenizer,
                                             std::vector<std::int64_t> end_ids);

}  // namespace staticlm
