#include "runtime/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/error.h"

namespace staticlm {

const char* stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::kEos: return "eos";
    case StopReason::kStopString: return "stop string";
    case StopReason::kMaxNewTokens: return "max new tokens";
    case StopReason::kCacheFull: return "cache full";
    case StopReason::kCallback: return "stopped by caller";
  }
  return "?";
}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Every EOS id has a logit bias of -inf.
bool ends_banned(const GenerateOptions& o) {
  return std::all_of(o.eos_token_ids.begin(), o.eos_token_ids.end(), [&](std::int64_t id) {
    return std::any_of(o.sampling.logit_bias.begin(), o.sampling.logit_bias.end(),
                       [&](const auto& b) { return b.first == id && b.second == -INFINITY; });
  });
}

}  // namespace

GenerationResult generate(TokenSource& source, std::span<const std::int64_t> history, const GenerateOptions& options,
                          const TokenCallback& on_token) {
  if (options.max_new_tokens < 1) {
    invalid_argument("generate: max_new_tokens " + std::to_string(options.max_new_tokens) + " must be at least 1");
  }
  if (!options.stop_strings.empty() && !options.token_text) {
    invalid_argument("generate: stop strings need token text (a tokenizer)");
  }
  Sampler sampler(options.sampling);
  GenerationResult r;
  std::vector<std::int64_t> seen(history.begin(), history.end());
  std::string text;  // generated text so far, for stop strings
  std::size_t longest_stop = 0;
  for (const auto& s : options.stop_strings) longest_stop = std::max(longest_stop, s.size());

  const auto t0 = Clock::now();
  std::span<const float> logits = source.prefill();
  r.stats.prefill_seconds = seconds_since(t0);
  r.stats.prompt_tokens = source.prompt_tokens();
  if (options.record_logits) r.prefill_logits.assign(logits.begin(), logits.end());

  std::unique_ptr<TokenConstraint> constraint = options.constraint ? options.constraint() : nullptr;
  std::vector<std::uint8_t> allowed;
  std::vector<float> masked;
  for (;;) {
    std::span<const float> scores = logits;
    if (constraint) {
      // Whole, with the end tokens banned (--ignore-eos): the reply ends here, not in an error.
      if (constraint->done() && ends_banned(options)) {
        r.reason = StopReason::kEos;
        r.message = "the constrained reply is complete (its end tokens are banned)";
        break;
      }
      constraint->allowed(static_cast<std::int64_t>(logits.size()), allowed);
      masked.assign(logits.begin(), logits.end());
      for (std::size_t i = 0; i < masked.size(); ++i) {
        if (!allowed[i]) masked[i] = -INFINITY;
      }
      scores = masked;
    }
    const std::int64_t token = sampler.sample(scores, seen);
    if (constraint) constraint->accept(token);
    if (r.tokens.empty()) r.stats.time_to_first_token_seconds = seconds_since(t0);
    r.tokens.push_back(token);
    seen.push_back(token);
    r.stats.generated_tokens = static_cast<std::int64_t>(r.tokens.size());
    if (options.on_logits) options.on_logits(logits, token);
    const bool keep_going = (on_token ? on_token(token) : true) && !(options.should_stop && options.should_stop());

    if (options.is_eos(token)) {
      r.reason = StopReason::kEos;
      r.message = "end of sequence token " + std::to_string(token);
      break;
    }
    if (!options.stop_strings.empty()) {
      const std::string piece = options.token_text(token);
      text += piece;
      // Only the tail that the newest piece could complete needs searching.
      const std::size_t tail = piece.size() + longest_stop;
      const std::size_t from = text.size() > tail ? text.size() - tail : 0;
      const auto hit = std::find_if(options.stop_strings.begin(), options.stop_strings.end(),
                                    [&](const std::string& s) { return !s.empty() && text.find(s, from) != std::string::npos; });
      if (hit != options.stop_strings.end()) {
        r.reason = StopReason::kStopString;
        r.message = "stop string \"" + *hit + "\"";
        break;
      }
    }
    if (!keep_going) {
      r.reason = StopReason::kCallback;
      r.message = "stopped by the caller";
      break;
    }
    if (r.stats.generated_tokens >= options.max_new_tokens) {
      r.reason = StopReason::kMaxNewTokens;
      r.message = "reached max_new_tokens " + std::to_string(options.max_new_tokens);
      break;
    }
    if (source.remaining_capacity() <= 0) {
      r.reason = StopReason::kCacheFull;
      r.message = "the KV cache is full: max_seq " + std::to_string(source.max_seq()) + " holds " +
                  std::to_string(source.max_seq() - 1) + " tokens (prompt " + std::to_string(r.stats.prompt_tokens) +
                  " + " + std::to_string(r.stats.decode_steps) + " fed back); raise max_seq to generate more";
      break;
    }
    const auto t1 = Clock::now();
    logits = source.decode(token);
    r.stats.decode_seconds += seconds_since(t1);
    ++r.stats.decode_steps;
    if (options.record_logits) r.decode_logits.insert(r.decode_logits.end(), logits.begin(), logits.end());
  }
  return r;
}

}  // namespace staticlm
