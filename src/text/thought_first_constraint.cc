#include "text/thought_first_constraint.h"

#include "text/tokenizer.h"
#include "text/tool_calls.h"

namespace staticlm {

ThoughtFirstConstraint::ThoughtFirstConstraint(std::unique_ptr<TokenConstraint> then, std::int64_t open, std::int64_t close,
                                               std::vector<std::int64_t> end_ids)
    : then_(std::move(then)), open_(open), close_(close), end_ids_(std::move(end_ids)) {}

void ThoughtFirstConstraint::allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) {
  if (state_ == State::kThought) {
    // A thought holds any text; it cannot end the reply or open another thought.
    allowed.assign(static_cast<std::size_t>(vocab), 1);
    for (const std::int64_t id : end_ids_) {
      if (id >= 0 && id < vocab) allowed[static_cast<std::size_t>(id)] = 0;
    }
    if (open_ < vocab) allowed[static_cast<std::size_t>(open_)] = 0;
    return;
  }
  then_->allowed(vocab, allowed);
  if (state_ == State::kFirst && open_ < vocab) allowed[static_cast<std::size_t>(open_)] = 1;
}

void ThoughtFirstConstraint::accept(std::int64_t token) {
  switch (state_) {
    case State::kFirst:
      if (token == open_) {
        state_ = State::kThought;
        return;
      }
      state_ = State::kThen;
      then_->accept(token);
      return;
    case State::kThought:
      if (token == close_) state_ = State::kThen;
      return;
    case State::kThen:
      then_->accept(token);
      return;
  }
}

TokenConstraintFactory thought_first_factory(TokenConstraintFactory then, const Tokenizer& tokenizer,
                                             std::vector<std::int64_t> end_ids) {
  const std::int64_t open = tokenizer.token_to_id(kThoughtOpen), close = tokenizer.token_to_id(kThoughtClose);
  if (open < 0 || close < 0) return then;
  return [then = std::move(then), open, close, end_ids = std::move(end_ids)]() -> std::unique_ptr<TokenConstraint> {
    return std::make_unique<ThoughtFirstConstraint>(then(), open, close, end_ids);
  };
}

}  // namespace staticlm
