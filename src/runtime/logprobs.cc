#include "runtime/logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"

namespace staticlm {

TokenLogprob token_logprob(std::span<const float> logits, std::int64_t token, int top) {
  const auto n = static_cast<std::int64_t>(logits.size());
  if (token < 0 || token >= n) {
    invalid_argument("logprobs: token " + std::to_string(token) + " outside the " + std::to_string(n) + " logits");
  }
  if (top < 0) invalid_argument("logprobs: top " + std::to_string(top) + " must not be negative");
  // log-sum-exp around the maximum, in double: 262144 terms summed in float lose digits.
  double max = -std::numeric_limits<double>::infinity();
  for (float x : logits) max = std::max(max, static_cast<double>(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
  const double log_z = max + std::log(sum);

  TokenLogprob r;
  r.token = token;
  r.logprob = static_cast<double>(logits[static_cast<std::size_t>(token)]) - log_z;
  const std::int64_t k = std::min<std::int64_t>(top, n);
  if (k == 0) return r;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = i;
  const auto likelier = [&](std::int64_t a, std::int64_t b) {
    const float la = logits[static_cast<std::size_t>(a)], lb = logits[static_cast<std::size_t>(b)];
    return la != lb ? la > lb : a < b;
  };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), likelier);
  for (std::int64_t i = 0; i < k; ++i) {
    const std::int64_t id = ids[static_cast<std::size_t>(i)];
    r.top.emplace_back(id, static_cast<double>(logits[static_cast<std::size_t>(id)]) - log_z);
  }
  return r;
}

}  // namespace staticlm
