// Log-probabilities of generated tokens, as OpenAI's `logprobs` / `top_logprobs` report them:
// the model's own distribution (log-softmax of the soft-capped logits), before temperature,
// penalties and top-k / top-p / min-p filtering, as llama.cpp's server reports them by default.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace staticlm {

struct TokenLogprob {
  std::int64_t token = 0;
  double logprob = 0;
  std::vector<std::pair<std::int64_t, double>> top;  // the `top` likeliest tokens, likeliest first
};

// log p(token) and the `top` likeliest tokens (ties: the lower id first). Throws
// kInvalidArgument for a token outside the logits or top < 0.
TokenLogprob token_logprob(std::span<const float> logits, std::int64_t token, int top);

}  // namespace staticlm
