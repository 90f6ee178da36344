// The runtime's acceptance checks on random tiny models: static prefill equals dynamic
// (prefix + token-by-token decode), max_seq invariance, both RoPE conventions, padded-row
// skipping, the cache-full stop, and the backend contract check.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "backends/cpu/kernels/dispatch.h"
#include "base/error.h"
#include "random_model.h"
#include "test_util.h"

namespace staticlm {
namespace {

using test::max_abs_diff;
using test::random_prompt;
using test::RandomModel;


// Prefill of the whole prompt vs prefill of a prefix then decoding the rest one token at a
// time: the logits after the last prompt token must agree.
void expect_static_equals_dynamic_on_target(const RandomModel& m, std::size_t prompt_len);

// ... on every kernel target this CPU has (the scalar reference included).
void expect_static_equals_dynamic(const RandomModel& m, std::size_t prompt_len) {
  const std::string saved = cpu::kernel_target();
  for (const std::string& t : cpu::kernel_targets()) {
    SCOPED_TRACE("kernel target " + t);
    cpu::select_kernel_target(t);
    expect_static_equals_dynamic_on_target(m, prompt_len);
  }
  cpu::select_kernel_target(saved);
}

void expect_static_equals_dynamic_on_target(const RandomModel& m, std::size_t prompt_len) {
  auto b = m.backend(64);
  auto rt = Runtime::create(*b, m.config, m.layers);
  const auto prompt = random_prompt(prompt_len, m.config.text.vocab_size, 11 + prompt_len);
  const std::vector<float> full = test::to_vector(rt->prefill_tokens(prompt));
  for (std::size_t prefix : {std::size_t{1}, prompt_len / 2, prompt_len - 1}) {
    std::vector<float> last = test::to_vector(rt->prefill_tokens(std::span(prompt).first(prefix)));
    for (std::size_t i = prefix; i < prompt_len; ++i) last = test::to_vector(rt->decode(prompt[i]));
    EXPECT_EQ(rt->past_len(), static_cast<std::int64_t>(prompt_len));
    EXPECT_LT(max_abs_diff(full, last), 1e-4f) << "prompt " << prompt_len << ", prefix " << prefix;
  }
}

// The tiny preset has a sliding window of 16; 10 tokens stay inside it, 40 cross it.
TEST(StaticEqualsDynamic, WithKvSharing) {
  const RandomModel m(1);
  ASSERT_EQ(m.config.text.num_kv_shared_layers, 2);
  ASSERT_EQ(m.config.text.sliding_window, 16);
  expect_static_equals_dynamic(m, 10);
  expect_static_equals_dynamic(m, 40);
}

TEST(StaticEqualsDynamic, WithoutKvSharing) {
  const RandomModel m(2, [](ModelConfig& c) {
    c.text.num_kv_shared_layers = 0;
    c.text.use_double_wide_mlp = false;
  });
  for (const LayerInfo& l : m.layers) ASSERT_TRUE(l.owns_kv);
  expect_static_equals_dynamic(m, 10);
  expect_static_equals_dynamic(m, 40);
}

// The bf16-activation policy (prefill GEMMs round activations to bf16; decode GEMV keeps f32) is
// a bounded approximation: prefill logits differ from the token-by-token ones by more than f32
// rounding but stay within 2% of the logit range, and the greedy token is the same.
TEST(StaticEqualsDynamic, Bf16ActivationsStayWithinTheirBound) {
  const RandomModel m(1);
  auto f32 = m.backend(64);
  auto bf16 = m.backend(64, RopeSine::kPreNegatedSin, true, nullptr, /*bf16_activations=*/true);
  auto rt32 = Runtime::create(*f32, m.config, m.layers);
  auto rt16 = Runtime::create(*bf16, m.config, m.layers);
  const auto prompt = random_prompt(30, m.config.text.vocab_size, 5);
  const std::vector<float> exact = test::to_vector(rt32->prefill_tokens(prompt));
  const std::vector<float> rounded = test::to_vector(rt16->prefill_tokens(prompt));
  const auto [lo, hi] = std::minmax_element(exact.begin(), exact.end());
  const float diff = max_abs_diff(exact, rounded);
  EXPECT_GT(diff, 1e-5f) << "bf16 activations changed nothing: the policy is not applied";
  EXPECT_LT(diff, 0.02f * (*hi - *lo)) << "range " << *lo << ".." << *hi;
  RecordProperty("max_abs_diff", std::to_string(diff) + " of range " + std::to_string(*hi - *lo));
  EXPECT_EQ(std::max_element(exact.begin(), exact.end()) - exact.begin(),
            std::max_element(rounded.begin(), rounded.end()) - rounded.begin());
}

TEST(StaticEqualsDynamic, WithoutPerLayerEmbeddings) {
  const RandomModel m(3, [](ModelConfig& c) { c.text.hidden_size_per_layer_input = 0; });
  expect_static_equals_dynamic(m, 25);
}

// The same prompt and continuation under max_seq 64, 128 and 512.
TEST(Runtime, MaxSeqInvariance) {
  const RandomModel m(4);
  const auto prompt = random_prompt(20, m.config.text.vocab_size, 5);
  const std::vector<std::int64_t> next = {17, 400, 23, 9, 999};
  std::vector<std::vector<float>> runs;
  for (std::int64_t max_seq : {64, 128, 512}) {
    auto b = m.backend(max_seq);
    auto rt = Runtime::create(*b, m.config, m.layers);
    std::vector<float> all = test::to_vector(rt->prefill_tokens(prompt));
    for (std::int64_t t : next) {
      const auto l = rt->decode(t);
      all.insert(all.end(), l.begin(), l.end());
    }
    runs.push_back(std::move(all));
  }
  EXPECT_LT(max_abs_diff(runs[0], runs[1]), 1e-5f);
  EXPECT_LT(max_abs_diff(runs[0], runs[2]), 1e-5f);
}

// hf and pre_negated_sin tables with their matching graphs give the same logits.
TEST(Runtime, BothRopeConventionsGiveIdenticalLogits) {
  const RandomModel m(5);
  const auto prompt = random_prompt(30, m.config.text.vocab_size, 6);
  std::vector<std::vector<float>> runs;
  for (RopeSine sine : {RopeSine::kHf, RopeSine::kPreNegatedSin}) {
    auto b = m.backend(48, sine);
    auto rt = Runtime::create(*b, m.config, m.layers);
    std::vector<float> all = test::to_vector(rt->prefill_tokens(prompt));
    const auto l = rt->decode(77);
    all.insert(all.end(), l.begin(), l.end());
    runs.push_back(std::move(all));
  }
  EXPECT_EQ(runs[0], runs[1]);
}

// Skipping padded prefill rows changes no valid output (DESIGN.md: a backend may skip work
// that cannot change a valid output).
TEST(Runtime, SkippingPaddedRowsMatchesTheFullComputation) {
  const RandomModel m(6);
  const auto prompt = random_prompt(12, m.config.text.vocab_size, 7);
  std::vector<std::vector<float>> runs;
  for (bool skip : {true, false}) {
    auto b = m.backend(40, RopeSine::kPreNegatedSin, skip);
    auto rt = Runtime::create(*b, m.config, m.layers);
    std::vector<float> all = test::to_vector(rt->prefill_tokens(prompt));
    const auto l = rt->decode(5);
    all.insert(all.end(), l.begin(), l.end());
    runs.push_back(std::move(all));
  }
  EXPECT_LT(max_abs_diff(runs[0], runs[1]), 1e-6f);
}

// A thread pool splits the work but computes every value the same way.
TEST(Runtime, ThreadPoolGivesIdenticalLogits) {
  const RandomModel m(12);
  const auto prompt = random_prompt(18, m.config.text.vocab_size, 3);
  ThreadPool pool(3);
  std::vector<std::vector<float>> runs;
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto b = m.backend(32, RopeSine::kPreNegatedSin, true, p);
    auto rt = Runtime::create(*b, m.config, m.layers);
    std::vector<float> all = test::to_vector(rt->prefill_tokens(prompt));
    const auto l = rt->decode(42);
    all.insert(all.end(), l.begin(), l.end());
    runs.push_back(std::move(all));
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(Runtime, LogitsAreSoftCapped) {
  const RandomModel m(7, [](ModelConfig& c) { c.text.final_logit_softcapping = 0.5; });
  auto b = m.backend(16);
  auto rt = Runtime::create(*b, m.config, m.layers);
  const auto l = rt->prefill_tokens(random_prompt(5, m.config.text.vocab_size, 8));
  float mx = 0;
  for (float v : l) mx = std::max(mx, std::abs(v));
  EXPECT_LE(mx, 0.5f);
  EXPECT_GT(mx, 0.3f);  // random logits are far beyond 0.5 before capping
}

TEST(Runtime, CacheFullStopsDecodeAndGeneration) {
  const RandomModel m(8);
  auto b = m.backend(8);
  auto rt = Runtime::create(*b, m.config, m.layers);
  const auto prompt = random_prompt(5, m.config.text.vocab_size, 9);
  rt->prefill_tokens(prompt);
  EXPECT_EQ(rt->remaining_capacity(), 2);
  rt->decode(10);
  rt->decode(11);
  EXPECT_EQ(rt->remaining_capacity(), 0);
  try {
    rt->decode(12);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_STREQ(e.what(), "decode: the KV cache is full: max_seq 8 holds 7 tokens and all are used");
  }
  GenerateOptions o;
  o.max_new_tokens = 100;
  o.sampling.temperature = 0;
  const GenerationResult r = rt->generate_tokens(prompt, o, nullptr);
  EXPECT_EQ(r.reason, StopReason::kCacheFull);
  EXPECT_EQ(r.tokens.size(), 3u);
  EXPECT_EQ(r.stats.decode_steps, 2);
  EXPECT_EQ(r.message,
            "the KV cache is full: max_seq 8 holds 7 tokens (prompt 5 + 2 fed back); raise max_seq to generate more");
  EXPECT_EQ(rt->past_len(), 7);
}

TEST(Runtime, PromptMustLeaveADecodeSlot) {
  const RandomModel m(9);
  auto b = m.backend(8);
  auto rt = Runtime::create(*b, m.config, m.layers);
  try {
    rt->prefill_tokens(random_prompt(8, m.config.text.vocab_size, 1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "prompt of 8 tokens does not fit: max_seq 8 takes 1 to 7 prompt tokens (one slot is kept for decoding)");
  }
  std::vector<std::int64_t> padded(8, 0);
  try {
    rt->prefill(PrefillInput{padded, 8, {}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "prefill: valid_length 8 must be within [1, 7]: max_seq 8 must reserve one decode slot");
  }
  EXPECT_THROW(rt->decode(3), Error);  // no successful prefill yet
}

// Greedy generation picks the argmax of the logits the runtime returns, step by step.
TEST(Runtime, GreedyGenerationFollowsTheLogits) {
  const RandomModel m(10);
  auto b = m.backend(32);
  auto rt = Runtime::create(*b, m.config, m.layers);
  const auto prompt = random_prompt(6, m.config.text.vocab_size, 2);
  GenerateOptions o;
  o.max_new_tokens = 5;
  o.sampling.temperature = 0;
  o.record_logits = true;
  const GenerationResult r = rt->generate_tokens(prompt, o, nullptr);
  ASSERT_EQ(r.tokens.size(), 5u);
  const std::size_t v = static_cast<std::size_t>(m.config.text.vocab_size);
  auto argmax = [](std::span<const float> l) { return std::max_element(l.begin(), l.end()) - l.begin(); };
  EXPECT_EQ(argmax(r.prefill_logits), r.tokens[0]);
  for (std::size_t j = 0; j + 1 < r.tokens.size(); ++j) {
    EXPECT_EQ(argmax(std::span(r.decode_logits).subspan(j * v, v)), r.tokens[j + 1]);
  }
  // The same run by hand.
  std::vector<float> l = test::to_vector(rt->prefill_tokens(prompt));
  EXPECT_EQ(l, r.prefill_logits);
  l = test::to_vector(rt->decode(r.tokens[0]));
  EXPECT_EQ(l, std::vector<float>(r.decode_logits.begin(), r.decode_logits.begin() + v));
}

TEST(Runtime, UnsupportedModelsAndOptionsAreRefused) {
  const RandomModel m(13, [](ModelConfig& c) { c.text.use_bidirectional_attention = "vision"; });
  auto b = m.backend(16);
  try {
    Runtime::create(*b, m.config, m.layers);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_STREQ(e.what(),
                 "config.json: text_config.use_bidirectional_attention \"vision\" is not supported: the runtime builds "
                 "causal masks only (E2B has null)");
  }
  const RandomModel ok(14);
  auto b2 = ok.backend(16);
  RuntimeOptions o;
  o.mask_fill_value = 0.0f;
  EXPECT_THROW(Runtime::create(*b2, ok.config, ok.layers, o), Error);
}

TEST(Runtime, BackendOfAnotherModelIsRefused) {
  const RandomModel m(11);
  const RandomModel other(12, [](ModelConfig& c) { c.text.num_kv_shared_layers = 0; });
  auto b = other.backend(16);
  try {
    Runtime::create(*b, m.config, m.layers);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "backend cpu: subgraph decoder_layer_prefill_4 has 5 inputs, expected 7");
  }
}

}  // namespace
}  // namespace staticlm
