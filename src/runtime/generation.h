// The generation loop: sample, stream, stop, feed back. Stops on any of the checkpoint's EOS
// ids, on a stop string in the generated text, after max_new_tokens, when the caller's
// callback says so, or cleanly (with a message) when the KV cache is full; it never decodes
// past the cache. Measures prefill and decode throughput and time to first token.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/token_constraint.h"

namespace staticlm {

enum class StopReason { kEos, kStopString, kMaxNewTokens, kCacheFull, kCallback };
const char* stop_reason_name(StopReason reason);

struct GenerationStats {
  std::int64_t prompt_tokens = 0;
  std::int64_t generated_tokens = 0;
  std::int64_t decode_steps = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double time_to_first_token_seconds = 0;  // prefill + first sample
  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  double decode_tokens_per_second() const { return decode_seconds > 0 ? decode_steps / decode_seconds : 0; }
};

// max_new_tokens that only a full cache (or an end token, a stop string) ends: llama.cpp's -n -1.
inline constexpr std::int64_t kNoTokenLimit = INT64_MAX;

struct GenerateOptions {
  std::int64_t max_new_tokens = 256;
  SamplingOptions sampling;
  std::vector<std::int64_t> eos_token_ids;  // any of them stops (and is kept in the output)
  bool is_eos(std::int64_t token) const {
    return std::find(eos_token_ids.begin(), eos_token_ids.end(), token) != eos_token_ids.end();
  }
  std::vector<std::string> stop_strings;    // needs token_text
  // Text of one token, for stop strings (e.g. a detokenizer's piece); may be empty otherwise.
  std::function<std::string(std::int64_t)> token_text;
  // Keep every decode step's logits (for --dump-logits).
  bool record_logits = false;
  // Called with the logits that chose each token, before the token callback (e.g. for the
  // tokens' log-probabilities); may be empty.
  std::function<void(std::span<const float> logits, std::int64_t token)> on_logits;
  // Makes the rule each generation's tokens follow (a JSON schema); empty: none. The tokens it
  // does not allow get -inf before the logit bias, penalties and sampling.
  TokenConstraintFactory constraint;
  // Polled before each layer of the prompt's prefill or append (true: StoppedByCaller is thrown,
  // runtime/runtime_state.h) and after each token (true: kCallback); may be empty.
  std::function<bool()> should_stop;
};

struct GenerationResult {
  std::vector<std::int64_t> tokens;  // generated tokens, the stopping one included
  StopReason reason = StopReason::kMaxNewTokens;
  std::string message;               // why it stopped, in words (for kCacheFull: the limit)
  GenerationStats stats;
  std::vector<float> prefill_logits;  // [V] when record_logits
  std::vector<float> decode_logits;   // [decode_steps, V] when record_logits: row j chose tokens[j+1]
};

// The model side of the loop: prefill once, then decode one token at a time.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual std::span<const float> prefill() = 0;
  virtual std::span<const float> decode(std::int64_t token) = 0;
  // Tokens that can still be fed before the cache is full.
  virtual std::int64_t remaining_capacity() const = 0;
  virtual std::int64_t prompt_tokens() const = 0;
  virtual std::int64_t max_seq() const = 0;
};

// Called with each new token as soon as it is chosen; return false to stop (kCallback).
using TokenCallback = std::function<bool(std::int64_t token)>;

// `history`: the prompt tokens (for the repetition penalty). Throws kInvalidArgument for
// max_new_tokens < 1 or stop strings without token_text.
GenerationResult generate(TokenSource& source, std::span<const std::int64_t> history, const GenerateOptions& options,
                          const TokenCallback& on_token);

}  // namespace staticlm
