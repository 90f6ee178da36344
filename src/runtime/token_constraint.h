// A rule on which tokens may come next (a JSON schema, a grammar), applied by the generation loop
// before sampling: the tokens it does not allow get a logit of -inf. A constraint is made fresh for
// each generation and follows the tokens chosen.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace staticlm {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // allowed[t] = 1 for each token that may come next, 0 for the others; resized to `vocab`.
  virtual void allowed(std::int64_t vocab, std::vector<std::uint8_t>& allowed) = 0;
  // The token chosen (one allowed() allowed).
  virtual void accept(std::int64_t token) = 0;
  // Nothing but an end token may follow (the constrained text is whole).
  virtual bool done() const = 0;
};

using TokenConstraintFactory = std::function<std::unique_ptr<TokenConstraint>()>;

}  // namespace staticlm
