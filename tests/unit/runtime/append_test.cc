// Append-prefill (decoder_layer_append_q{Q}_{i}) on random tiny models, checked against two
// independent computations of the same history: one-shot prefill of all of it, and feeding the
// new tokens one by one through decode. Histories cross the sliding window (16 on the tiny
// preset) and run through the shared-KV layers; turns are cut at arbitrary points.
#include <gtest/gtest.h>

#include <vector>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "random_model.h"
#include "runtime/masks.h"
#include "test_util.h"

namespace staticlm {
namespace {

using test::max_abs_diff;
using test::random_prompt;
using test::RandomModel;


std::unique_ptr<CpuBackend> backend(const RandomModel& m, std::int64_t max_seq, std::vector<std::int64_t> buckets,
                                    bool skip_padded_rows = true) {
  SubgraphProfile p;
  p.max_seq = max_seq;
  p.append_lengths = std::move(buckets);
  CpuBackendOptions o;
  o.bf16_activations = false;  // f32 everywhere: prefill, append and decode rows agree to f32 rounding
  o.skip_padded_rows = skip_padded_rows;
  return CpuBackend::create(m.config, m.layers, m.getter(), p, o);
}

// One-shot prefill of history[0, n) on a fresh runtime.
std::vector<float> one_shot(const RandomModel& m, std::int64_t max_seq, std::span<const std::int64_t> history) {
  auto b = backend(m, max_seq, {});
  auto rt = Runtime::create(*b, m.config, m.layers);
  return test::to_vector(rt->prefill_tokens(history));
}

// Turn boundaries (cumulative lengths): the first turn is a full prefill, the rest appends.
void expect_append_equals_one_shot(const RandomModel& m, std::int64_t max_seq, std::vector<std::int64_t> buckets,
                                   const std::vector<std::size_t>& cuts) {
  const auto history = random_prompt(cuts.back(), m.config.text.vocab_size, 17);
  auto b = backend(m, max_seq, buckets);
  auto rt = Runtime::create(*b, m.config, m.layers);
  ASSERT_EQ(rt->append_buckets(), buckets);
  rt->prefill_tokens(std::span(history).first(cuts[0]));
  for (std::size_t t = 1; t < cuts.size(); ++t) {
    const auto turn = std::span(history).subspan(cuts[t - 1], cuts[t] - cuts[t - 1]);
    const std::vector<float> appended = test::to_vector(rt->append(turn));
    EXPECT_EQ(rt->past_len(), static_cast<std::int64_t>(cuts[t]));
    const std::vector<float> whole = one_shot(m, max_seq, std::span(history).first(cuts[t]));
    EXPECT_LT(max_abs_diff(appended, whole), 1e-4f) << "turn " << t << " ending at " << cuts[t];
  }
}

TEST(Append, EqualsOneShotPrefillAcrossTheSlidingWindowAndSharedKv) {
  const RandomModel m(1);
  ASSERT_EQ(m.config.text.sliding_window, 16);
  ASSERT_EQ(m.config.text.num_kv_shared_layers, 2);
  // Turns of 7 (bucket 8), 20 (16 + 4 -> bucket 8), 1 (bucket 3), 13 (16): past 10 .. 51.
  expect_append_equals_one_shot(m, 64, {3, 8, 16}, {10, 17, 37, 38, 51});
}

TEST(Append, EqualsOneShotWithoutKvSharingOrPerLayerInputs) {
  const RandomModel a(2, [](ModelConfig& c) {
    c.text.num_kv_shared_layers = 0;
    c.text.use_double_wide_mlp = false;
  });
  expect_append_equals_one_shot(a, 48, {4, 16}, {5, 22, 40});
  const RandomModel b(3, [](ModelConfig& c) { c.text.hidden_size_per_layer_input = 0; });
  expect_append_equals_one_shot(b, 48, {4, 16}, {5, 22, 40});
}

// Two KV heads: the past is no longer a prefix of one buffer and goes through the staging copy.
TEST(Append, EqualsOneShotWithSeveralKvHeads) {
  const RandomModel m(4, [](ModelConfig& c) {
    c.text.num_attention_heads = 4;
    c.text.num_key_value_heads = 2;
  });
  ASSERT_EQ(m.layers[0].num_kv_heads, 2);
  expect_append_equals_one_shot(m, 48, {4, 16}, {9, 30, 33});
}

// Near the end of the cache the big buckets' past (S-Q slots) no longer holds the history: a
// smaller bucket, then a decode step, take over; the result still equals one-shot prefill.
TEST(Append, FallsBackToSmallerBucketsThenDecodeAtTheEndOfTheCache) {
  const RandomModel m(5);
  expect_append_equals_one_shot(m, 40, {8, 16}, {30, 39});
}

// The same new tokens fed one by one through decode: same logits, same cache rows.
TEST(Append, EqualsDecodingTheNewTokensOneByOne) {
  const RandomModel m(6);
  const auto history = random_prompt(42, m.config.text.vocab_size, 23);
  auto b1 = backend(m, 64, {16, 32});
  auto b2 = backend(m, 64, {});
  auto by_append = Runtime::create(*b1, m.config, m.layers);
  auto by_decode = Runtime::create(*b2, m.config, m.layers);
  by_append->prefill_tokens(std::span(history).first(12));
  by_decode->prefill_tokens(std::span(history).first(12));
  const std::vector<float> a = test::to_vector(by_append->append(std::span(history).subspan(12)));
  std::vector<float> d;
  for (std::size_t i = 12; i < history.size(); ++i) d = test::to_vector(by_decode->decode(history[i]));
  EXPECT_LT(max_abs_diff(a, d), 1e-4f);
  // K and V rows (about unit size after their norms) differ only by f32 rounding: the prefill
  // GEMM and the decode GEMV sum in different orders, and differently on each kernel target
  // (AVX2 builds measured 1.3e-5; AVX-512 below 1e-5). A wrong row is off by O(1).
  for (const LayerInfo& l : m.layers) {
    if (!l.owns_kv) continue;
    EXPECT_LT(max_abs_diff(by_append->cache().k(l.index), by_decode->cache().k(l.index)), 5e-5f) << l.index;
    EXPECT_LT(max_abs_diff(by_append->cache().v(l.index), by_decode->cache().v(l.index)), 5e-5f) << l.index;
  }
  // And decoding continues identically from either state.
  EXPECT_LT(max_abs_diff(test::to_vector(by_append->decode(99)), test::to_vector(by_decode->decode(99))), 1e-4f);
}

// Prefill buckets: a fresh prompt goes through the smallest bucket that holds it (or chunks of
// the largest), equal to the max_seq prefill; skipping the bucket's padding rows changes nothing.
TEST(Append, BucketedPrefillEqualsFullPrefill) {
  const RandomModel m(7);
  for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{16}, std::size_t{37}}) {
    const auto prompt = random_prompt(n, m.config.text.vocab_size, 31 + n);
    const std::vector<float> full = one_shot(m, 48, prompt);
    for (bool skip : {true, false}) {
      auto b = backend(m, 48, {8, 16}, skip);
      auto rt = Runtime::create(*b, m.config, m.layers);
      EXPECT_LT(max_abs_diff(test::to_vector(rt->prefill_bucketed(prompt)), full), 1e-4f) << n << " tokens, skip " << skip;
      EXPECT_EQ(rt->past_len(), static_cast<std::int64_t>(n));
    }
  }
}

TEST(Append, PicksTheSmallestBucketThatHoldsTheTokens) {
  const RandomModel m(8);
  auto b = backend(m, 64, {4, 16, 32});
  const RuntimeState state(*b, m.config, m.layers, -120.0f, nullptr);
  const Appender ap(state);
  EXPECT_EQ(ap.pick_bucket(64, 0, 3), 4);
  EXPECT_EQ(ap.pick_bucket(64, 0, 4), 4);
  EXPECT_EQ(ap.pick_bucket(64, 0, 5), 16);
  EXPECT_EQ(ap.pick_bucket(64, 10, 100), 32);  // chunks of the largest
  EXPECT_EQ(ap.pick_bucket(64, 40, 20), 16);   // 32 would need past_len <= 32
  EXPECT_EQ(ap.pick_bucket(64, 61, 2), 0);     // none fits: decode
}

// A turn that does not fit is refused before anything changes.
TEST(Append, OverflowIsRefusedAndTheConversationStaysIntact) {
  const RandomModel m(9);
  const auto history = random_prompt(30, m.config.text.vocab_size, 41);
  auto b = backend(m, 32, {8});
  auto rt = Runtime::create(*b, m.config, m.layers);
  rt->prefill_tokens(std::span(history).first(20));
  const std::vector<std::int64_t> big(12, 7);
  try {
    rt->append(big);
    FAIL() << "expected kOutOfRange";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_STREQ(e.what(),
                 "append: 12 tokens after 20 in the cache do not fit: max_seq 32 holds 31 (one slot is kept for decoding)");
  }
  EXPECT_EQ(rt->past_len(), 20);
  const std::vector<float> a = test::to_vector(rt->append(std::span(history).subspan(20, 10)));
  EXPECT_LT(max_abs_diff(a, one_shot(m, 32, history)), 1e-4f);
}

// Rewinding to a shared prefix and appending a different continuation equals its one-shot.
TEST(Append, RewindThenAppendEqualsOneShot) {
  const RandomModel m(10);
  const auto a = random_prompt(30, m.config.text.vocab_size, 51);
  auto b = random_prompt(26, m.config.text.vocab_size, 52);
  std::copy_n(a.begin(), 18, b.begin());  // shares 18 tokens with a
  auto be = backend(m, 48, {4, 16});
  auto rt = Runtime::create(*be, m.config, m.layers);
  rt->prefill_bucketed(a);
  rt->rewind(18);
  const std::vector<float> got = test::to_vector(rt->append(std::span(b).subspan(18)));
  EXPECT_LT(max_abs_diff(got, one_shot(m, 48, b)), 1e-4f);
}

TEST(AppendMask, RowsSeeThePastTheirOwnPrefixAndTheWindow) {
  // max_seq 10, Q 3, past 4, 2 new tokens; key slots 0..6 past, 7..9 new rows.
  std::vector<float> full(30), sliding(30);
  build_append_mask(full, 10, 3, 4, 2, std::nullopt, -1.0f);
  build_append_mask(sliding, 10, 3, 4, 2, 3, -1.0f);
  auto allowed = [](const std::vector<float>& m, int row) {
    std::vector<int> a;
    for (int k = 0; k < 10; ++k) if (m[row * 10 + k] == 0.0f) a.push_back(k);
    return a;
  };
  EXPECT_EQ(allowed(full, 0), (std::vector<int>{0, 1, 2, 3, 7}));
  EXPECT_EQ(allowed(full, 1), (std::vector<int>{0, 1, 2, 3, 7, 8}));
  EXPECT_EQ(allowed(full, 2), allowed(full, 1));  // padding row repeats the last real one
  // Window 3: position 4 sees 2, 3 and itself; position 5 sees 3, 4 (new row 0) and itself.
  EXPECT_EQ(allowed(sliding, 0), (std::vector<int>{2, 3, 7}));
  EXPECT_EQ(allowed(sliding, 1), (std::vector<int>{3, 7, 8}));
  std::vector<float> m(30);
  EXPECT_THROW(build_append_mask(m, 10, 3, 8, 1, std::nullopt, -1.0f), Error);  // past 8 > 10 - 3
  EXPECT_NO_THROW(build_append_mask(m, 10, 3, 6, 3, std::nullopt, -1.0f));     // 6 + 3 = 9 slots
  EXPECT_THROW(build_append_mask(m, 10, 3, 7, 3, std::nullopt, -1.0f), Error);  // 7 + 3 > 9
  EXPECT_THROW(build_append_mask(m, 10, 3, 0, 4, std::nullopt, -1.0f), Error);  // 4 > Q
}

TEST(AppendContract, SignaturesAndBadBuckets) {
  const RandomModel m(11);
  auto b = backend(m, 32, {4, 8});
  const SubgraphSignature& owner = b->signature(decoder_layer_append_name(0, 8));
  EXPECT_EQ(owner.inputs[1].shape, (Shape{1, 1, 8, 32}));
  EXPECT_EQ(owner.inputs.back().name, "past_value");
  EXPECT_EQ(owner.inputs.back().shape[2], 24);  // S - Q
  EXPECT_EQ(owner.outputs[1].shape[2], 8);
  const int consumer = static_cast<int>(m.layers.size()) - 1;
  ASSERT_FALSE(m.layers[consumer].owns_kv);
  EXPECT_EQ(b->signature(decoder_layer_append_name(consumer, 4)).inputs.back().shape[2], 32);
  for (const std::vector<std::int64_t>& bad : {std::vector<std::int64_t>{0}, {32}, {8, 4}, {4, 4}}) {
    EXPECT_THROW(backend(m, 32, bad), Error);
  }
}

}  // namespace
}  // namespace staticlm
