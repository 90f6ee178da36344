// The generation loop against a scripted TokenSource: each step's logits favour a token chosen
// by the script (logit 10, the next id 5, the rest -10), so the expected output is known exactly.
#include "runtime/generation.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"

namespace staticlm {
namespace {

constexpr std::int64_t kVocab = 16;

class ScriptedSource : public TokenSource {
 public:
  ScriptedSource(std::vector<std::int64_t> script, std::int64_t max_seq, std::int64_t prompt)
      : script_(std::move(script)), max_seq_(max_seq), prompt_(prompt), logits_(kVocab) {}
  std::span<const float> prefill() override {
    past_ = prompt_;
    return next();
  }
  std::span<const float> decode(std::int64_t token) override {
    if (past_ >= max_seq_ - 1) throw Error(ErrorKind::kOutOfRange, "overrun");  // must never happen
    fed_.push_back(token);
    ++past_;
    return next();
  }
  std::int64_t remaining_capacity() const override { return max_seq_ - 1 - past_; }
  std::int64_t prompt_tokens() const override { return prompt_; }
  std::int64_t max_seq() const override { return max_seq_; }
  const std::vector<std::int64_t>& fed() const { return fed_; }

 private:
  std::span<const float> next() {
    std::fill(logits_.begin(), logits_.end(), -10.0f);
    const std::int64_t t = script_[step_++ % script_.size()];
    logits_[static_cast<std::size_t>((t + 1) % kVocab)] = 5.0f;  // a runner-up
    logits_[static_cast<std::size_t>(t)] = 10.0f;
    return logits_;
  }
  std::vector<std::int64_t> script_;
  std::int64_t max_seq_, prompt_, past_ = 0;
  std::size_t step_ = 0;
  std::vector<float> logits_;
  std::vector<std::int64_t> fed_;
};

GenerateOptions greedy(std::int64_t n) {
  GenerateOptions o;
  o.max_new_tokens = n;
  o.sampling.temperature = 0;
  return o;
}

TEST(Generation, StopsAfterMaxNewTokens) {
  ScriptedSource src({5, 6, 7}, 100, 3);
  std::vector<std::int64_t> streamed;
  const auto r = generate(src, {}, greedy(4), [&](std::int64_t t) {
    streamed.push_back(t);
    return true;
  });
  EXPECT_EQ(r.tokens, (std::vector<std::int64_t>{5, 6, 7, 5}));
  EXPECT_EQ(streamed, r.tokens);
  EXPECT_EQ(r.reason, StopReason::kMaxNewTokens);
  EXPECT_EQ(src.fed(), (std::vector<std::int64_t>{5, 6, 7}));  // the last token is never fed
  EXPECT_EQ(r.stats.decode_steps, 3);
  EXPECT_EQ(r.stats.prompt_tokens, 3);
}

TEST(Generation, StopsOnAnyEosId) {
  ScriptedSource src({4, 9, 1, 3}, 100, 2);
  GenerateOptions o = greedy(50);
  o.eos_token_ids = {1, 106};
  const auto r = generate(src, {}, o, nullptr);
  EXPECT_EQ(r.tokens, (std::vector<std::int64_t>{4, 9, 1}));
  EXPECT_EQ(r.reason, StopReason::kEos);
  EXPECT_EQ(r.message, "end of sequence token 1");
}

TEST(Generation, StopsOnStopStringAcrossTokens) {
  ScriptedSource src({1, 2, 3, 4}, 100, 2);
  GenerateOptions o = greedy(50);
  const char* pieces[] = {"", "he", "l", "lo", " w"};
  o.token_text = [&](std::int64_t t) { return std::string(pieces[t]); };
  o.stop_strings = {"llo"};
  const auto r = generate(src, {}, o, nullptr);
  EXPECT_EQ(r.tokens, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(r.reason, StopReason::kStopString);
  EXPECT_EQ(r.message, "stop string \"llo\"");
}

TEST(Generation, CallbackCanStop) {
  ScriptedSource src({2}, 100, 2);
  int calls = 0;
  const auto r = generate(src, {}, greedy(50), [&](std::int64_t) { return ++calls < 3; });
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(r.reason, StopReason::kCallback);
}

// max_seq 8 with a 5-token prompt: slots 5 and 6 take two fed tokens, then the cache is full.
// The loop stops cleanly with the documented message and never calls decode past it.
TEST(Generation, CacheFullStopsCleanly) {
  ScriptedSource src({3}, 8, 5);
  const auto r = generate(src, {}, greedy(50), nullptr);
  EXPECT_EQ(r.reason, StopReason::kCacheFull);
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(src.fed().size(), 2u);
  EXPECT_EQ(r.message,
            "the KV cache is full: max_seq 8 holds 7 tokens (prompt 5 + 2 fed back); raise max_seq to generate more");
}

TEST(Generation, RecordsLogitsPerStep) {
  ScriptedSource src({7, 8}, 100, 1);
  GenerateOptions o = greedy(3);
  o.record_logits = true;
  const auto r = generate(src, {}, o, nullptr);
  ASSERT_EQ(r.prefill_logits.size(), static_cast<std::size_t>(kVocab));
  ASSERT_EQ(r.decode_logits.size(), static_cast<std::size_t>(2 * kVocab));
  EXPECT_EQ(r.prefill_logits[7], 10.0f);        // chose tokens[0] = 7
  EXPECT_EQ(r.decode_logits[8], 10.0f);         // row 0 chose tokens[1] = 8
  EXPECT_EQ(r.decode_logits[kVocab + 7], 10.0f);  // row 1 chose tokens[2] = 7
}

// The repetition penalty sees the prompt history: with penalty 100 on token 5 (from the
// prompt), its logit 10 drops to 0.1 and greedy picks the runner-up 6 (logit 5).
TEST(Generation, HistoryFeedsTheRepetitionPenalty) {
  ScriptedSource src({5}, 100, 2);
  GenerateOptions o = greedy(1);
  o.sampling.repetition_penalty = 100.0;
  const std::vector<std::int64_t> history = {5, 0};
  const auto r = generate(src, history, o, nullptr);
  EXPECT_EQ(r.tokens[0], 6);
}

TEST(Generation, BadOptionsAreRefused) {
  ScriptedSource src({5}, 100, 2);
  EXPECT_THROW(generate(src, {}, greedy(0), nullptr), Error);
  GenerateOptions o = greedy(3);
  o.stop_strings = {"x"};
  try {
    generate(src, {}, o, nullptr);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "generate: stop strings need token text (a tokenizer)");
  }
}

}  // namespace
}  // namespace staticlm
