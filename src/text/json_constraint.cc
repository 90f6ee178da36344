#include "text/json_constraint.h"

#include <algorithm>

#include "base/error.h"
#include "text/tokenizer.h"

namespace staticlm {

JsonConstraint::JsonConstraint(std::shared_ptr<const JsonSchema> schema, const TokenIndex& index,
                               std::vector<std::int64_t> end_ids)
    : schema_(std::move(schema)), index_(index), end_ids_(std::move(end_ids)), matcher_(*schema_) {
  states_.assign(index_.max_bytes + 1, matcher_);
}

void JsonConstraint::allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) {
  allowed.assign(static_cast<std::size_t>(vocab), 0);
  if (matcher_.complete()) {
    for (std::int64_t e : end_ids_) {
      if (e >= 0 && e < vocab) allowed[static_cast<std::size_t>(e)] = 1;
    }
  }
  if (matcher_.finished()) return;
  // The sorted vocabulary as a trie: states_[0..have] hold the matcher after each prefix of the
  // token before; a token reuses those it shares, and one that shares the byte where the token
  // before failed (at byte `failed`) fails too.
  // Inside a string, a token of whole plain characters that fits is allowed without feeding it
  // (most of the vocabulary); `shared` then spans the tokens passed over (the common prefix of
  // two sorted strings is the least of the adjacent ones between them).
  const std::int64_t room = matcher_.string_room();
  states_[0] = matcher_;
  std::size_t have = 0;
  std::int64_t failed = -1;
  std::uint32_t shared = 0;
  for (std::size_t i = 0; i < index_.sorted.size(); ++i) {
    const std::int32_t id = index_.sorted[i];
    const auto at = static_cast<std::size_t>(id);
    shared = std::min(shared, index_.lcp[i]);
    if (room >= 0 && index_.string_safe[at] && index_.chars[at] <= room) {
      if (id < vocab) allowed[at] = 1;
      continue;
    }
    const std::string& b = index_.bytes[at];
    const std::size_t common = shared;
    shared = UINT32_MAX;
    if (failed >= 0 && static_cast<std::int64_t>(common) > failed) continue;
    failed = -1;
    std::size_t d = std::min(common, have);
    for (; d < b.size(); ++d) {
      states_[d + 1] = states_[d];
      if (!states_[d + 1].feed(static_cast<unsigned char>(b[d]))) {
        failed = static_cast<std::int64_t>(d);
        break;
      }
    }
    have = d;
    if (failed < 0 && id < vocab) allowed[static_cast<std::size_t>(id)] = 1;
  }
}

TokenConstraintFactory json_constraint_factory(std::shared_ptr<const JsonSchema> schema, const Tokenizer& tokenizer,
                                               std::vector<std::int64_t> end_ids) {
  return [schema = std::move(schema), &tokenizer, end_ids = std::move(end_ids)]() -> std::unique_ptr<TokenConstraint> {
    return std::make_unique<JsonConstraint>(schema, tokenizer.token_index(), end_ids);
  };
}

void JsonConstraint::accept(std::int64_t token) {
  if (std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end()) return;
  const std::string* b = token >= 0 && static_cast<std::size_t>(token) < index_.bytes.size()
                             ? &index_.bytes[static_cast<std::size_t>(token)]
                             : nullptr;
  bool ok = b && !b->empty();
  for (std::size_t i = 0; ok && i < b->size(); ++i) ok = matcher_.feed(static_cast<unsigned char>((*b)[i]));
  if (!ok) invalid_argument("json constraint: token " + std::to_string(token) + " does not continue the JSON value");
}

}  // namespace staticlm
