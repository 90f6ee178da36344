#include "text/json_constraint.h"

#include <algorithm>

#include "base/error.h"
#include "text/tokenizer.h"
#include "text/vocabulary_walk.h"

namespace staticlm {

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonSchema> schema, const TokenIndex& index,
                               std::vector<std::int64_t> end_ids)
    : schema_(std::move(schema)), index_(index), end_ids_(std::move(end_ids)), matcher_(*schema_) {
}

void JsonConstraint::allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) {
  start_mask(end_ids_, matcher_.complete(), vocab, allowed);
  if (matcher_.finished()) return;
  // Inside a string, a token of whole plain characters that fits is allowed without feeding it
  // (most of the vocabulary).
  const std::int64_t room = matcher_.string_room();
  allow_taken_tokens(index_, matcher_, states_, vocab, allowed, [&](std::size_t at, std::string_view) {
    return room >= 0 && index_.string_safe[at] && index_.chars[at] <= room;
  });
}

TokenConstraintFactory json_constraint_factory(std::shared_ptr<const JsonSchema> schema, const Tokenizer& tokenizer,
                                               std::vector<std::int64_t> end_ids) {
  return [schema = std::move(schema), &tokenizer, end_ids = std::move(end_ids)]() -> std::unique_ptr<TokenConstraint> {
    return std::make_unique<JsonConstraint>(schema, tokenizer.token_index(), end_ids);
  };
}

void JsonConstraint::accept(std::int64_t token) {
  bool is_end = false;
  const std::string* b = token_text(index_, end_ids_, token, is_end);
  if (is_end) return;
  bool ok = b && !b->empty();
  for (std::size_t i = 0; ok && i < b->size(); ++i) ok = matcher_.feed(static_cast<unsigned char>((*b)[i]));
  if (!ok) invalid_argument("json constraint: token " + std::to_string(token) + " does not continue the JSON value");
}

}  // namespace staticlm
