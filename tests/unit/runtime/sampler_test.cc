#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <tuple>
#include <vector>

#include "base/error.h"

namespace staticlm {
namespace {

// Logits whose softmax is exactly the given probabilities.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

SamplingOptions opts(double temperature = 1.0) {
  SamplingOptions o;
  o.temperature = temperature;
  return o;
}

void expect_dist(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "token " << i;
}

TEST(Sampler, GreedyIsFirstArgmax) {
  Sampler s(opts(0.0));
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(s.sample(l, {}), 1);
  expect_dist(s.distribution(l, {}), {0, 1, 0, 0});
}

// Greedy with nothing to change the scores reads the logits in place; with a (zero) logit bias
// it scans a changed copy. Both give the first maximum on vocabulary-sized logits with ties and
// masked tokens, and refuse a NaN deep inside.
TEST(Sampler, GreedyOnTheLogitsAndOnAChangedCopyAgree) {
  std::vector<float> l(262144);
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i * i % 100003)));
  SamplingOptions biased = opts(0.0);
  biased.logit_bias = {{0, 0.0f}};
  Sampler fast(opts(0.0)), full(biased);
  for (const std::size_t top : {std::size_t{17}, std::size_t{131071}, std::size_t{262143}}) {
    std::vector<float> x = l;
    x[top] = 3.0f;
    if (top + 5 < x.size()) x[top + 5] = 3.0f;  // a tie after it
    x[top / 2] = -INFINITY;
    EXPECT_EQ(fast.sample(x, {}), static_cast<std::int64_t>(top));
    EXPECT_EQ(full.sample(x, {}), static_cast<std::int64_t>(top));
    x[200000] = NAN;
    EXPECT_THROW(fast.sample(x, {}), Error);
    EXPECT_THROW(full.sample(x, {}), Error);
  }
}

TEST(Sampler, PlainSoftmax) {
  Sampler s(opts());
  expect_dist(s.distribution(logits_of({0.5, 0.3, 0.2}), {}), {0.5, 0.3, 0.2});
}

// Temperature T: p_i proportional to p_i^(1/T).
TEST(Sampler, Temperature) {
  Sampler s(opts(0.5));
  const double a = 0.25, b = 0.09, c = 0.04, z = a + b + c;  // squares of 0.5, 0.3, 0.2
  expect_dist(s.distribution(logits_of({0.5, 0.3, 0.2}), {}), {a / z, b / z, c / z});
}

// Temperatures so small that 1 / T or the scaled scores overflow: the limit T -> 0 (greedy),
// never NaN probabilities. 1e-30 still computes a finite softmax that puts all mass on the top.
TEST(Sampler, TinyTemperatureIsTheGreedyLimit) {
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 1.5f};
  for (double t : {5e-324, 1e-310, 1e-300, 1e-30}) {
    Sampler s(opts(t));
    const auto d = s.distribution(l, {});
    expect_dist(d, {0, 1, 0, 0});
    EXPECT_EQ(s.sample(l, {}), 1) << "temperature " << t;
  }
}

// NaN or +Inf logits (from non-finite weights) are refused by name, greedy or not; -Inf is a
// masked token and samples as probability zero.
TEST(Sampler, NonFiniteLogitsAreRefused) {
  for (double t : {0.0, 1.0}) {
    Sampler s(opts(t));
    for (float bad : {NAN, INFINITY}) {
      const std::vector<float> l = {0.5f, 2.0f, bad, bad};
      try {
        s.sample(l, {});
        FAIL() << "temperature " << t;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
        EXPECT_STREQ(e.what(),
                     "the model's logits hold 2 NaN or +Inf values of 4 (first at token 2): the checkpoint's weights "
                     "or the inputs hold non-finite values");
      }
    }
    const std::vector<float> masked = {-INFINITY, 0.0f, -INFINITY};
    expect_dist(s.distribution(masked, {}), {0, 1, 0});
  }
}

TEST(Sampler, TopK) {
  SamplingOptions o = opts();
  o.top_k = 2;
  Sampler s(o);
  expect_dist(s.distribution(logits_of({0.1, 0.5, 0.3, 0.1}), {}), {0, 0.625, 0.375, 0});
  // Ties with the k-th score are kept, as upstream's `scores < kth` cut does.
  o.top_k = 1;
  Sampler t(o);
  expect_dist(t.distribution(logits_of({0.4, 0.2, 0.4}), {}), {0.5, 0, 0.5});
}

// Masked tokens (-inf, as a response format leaves most of them) take no place among the k:
// with fewer finite scores than top_k all of them stay, and a sample is always one of them.
TEST(Sampler, MaskedTokensAreNotCandidates) {
  SamplingOptions o = opts();
  o.top_k = 3;
  o.top_p = 0.9;
  Sampler s(o);
  std::vector<float> l(1000, -INFINITY);
  l[7] = std::log(0.25f), l[400] = std::log(0.7f), l[999] = std::log(0.05f);
  std::vector<double> want(1000, 0.0);
  want[7] = 0.25 / 0.95, want[400] = 0.7 / 0.95;  // top_p 0.9: 0.7, then 0.95 >= 0.9 stops
  expect_dist(s.distribution(l, {}), want);
  for (int i = 0; i < 200; ++i) {
    const std::int64_t t = s.sample(l, {});
    EXPECT_TRUE(t == 7 || t == 400) << t;
  }
}

// top-k against a reference computed another way: sort all scores, keep those at least the k-th.
// Scores on a coarse grid, so that ties at the cut are common; some masked.
TEST(Sampler, TopKMatchesASortedReference) {
  std::uint32_t rng = 7;
  const auto next = [&rng] { return rng = rng * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<float> l(3000);
    for (float& x : l) x = next() % 7 == 0 ? -INFINITY : static_cast<float>(next() % 50) * 0.25f;
    SamplingOptions o = opts(0.7);
    o.top_k = std::vector<std::int64_t>{1, 3, 64, 2999}[static_cast<std::size_t>(trial % 4)];
    std::vector<float> sorted;
    for (float x : l) {
      if (x != -INFINITY) sorted.push_back(x);
    }
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const float cut = sorted[static_cast<std::size_t>(std::min<std::int64_t>(o.top_k, static_cast<std::int64_t>(sorted.size())) - 1)];
    std::vector<double> want(l.size(), 0.0);
    double sum = 0;
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (l[i] >= cut) sum += want[i] = std::exp((static_cast<double>(l[i]) - sorted[0]) / 0.7);
    }
    for (double& w : want) w /= sum;
    Sampler s(o);
    expect_dist(s.distribution(l, {}), want);
  }
}

// top-p without top-k against a reference computed another way: all probabilities sorted, kept
// while the mass before a token is below top_p. Flat scores, so the cut falls past the first
// block the sampler sorts.
TEST(Sampler, TopPMatchesASortedReference) {
  std::uint32_t rng = 11;
  const auto next = [&rng] { return rng = rng * 1664525u + 1013904223u; };
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<float> l(5000);
    for (float& x : l) x = static_cast<float>(next() % 1000) * (trial % 2 ? 0.0005f : 0.02f);
    SamplingOptions o = opts();
    o.top_p = std::vector<double>{0.5, 0.9, 0.99}[static_cast<std::size_t>(trial % 3)];
    std::vector<std::pair<double, std::size_t>> by_p;
    double sum = 0;
    for (float x : l) sum += std::exp(static_cast<double>(x));
    for (std::size_t i = 0; i < l.size(); ++i) by_p.emplace_back(std::exp(static_cast<double>(l[i])) / sum, i);
    std::sort(by_p.begin(), by_p.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    std::vector<double> want(l.size(), 0.0);
    double before = 0, kept = 0;
    for (std::size_t j = 0; j < by_p.size() && (j == 0 || before < o.top_p); ++j) {
      before += by_p[j].first;
      kept += want[by_p[j].second] = by_p[j].first;
    }
    for (double& w : want) w /= kept;
    Sampler s(o);
    expect_dist(s.distribution(l, {}), want);
  }
}

// top_p 0.7 over [0.5, 0.3, 0.2]: 0.5 < 0.7 so the next token joins; 0.8 >= 0.7 stops.
TEST(Sampler, TopP) {
  SamplingOptions o = opts();
  o.top_p = 0.7;
  Sampler s(o);
  expect_dist(s.distribution(logits_of({0.2, 0.5, 0.3}), {}), {0, 0.625, 0.375});
  o.top_p = 0.5;  // the first token alone reaches 0.5
  Sampler t(o);
  expect_dist(t.distribution(logits_of({0.2, 0.5, 0.3}), {}), {0, 1, 0});
}

// min_p 0.5: keep tokens with p >= 0.5 * p_max = 0.25.
TEST(Sampler, MinP) {
  SamplingOptions o = opts();
  o.min_p = 0.5;
  Sampler s(o);
  expect_dist(s.distribution(logits_of({0.5, 0.3, 0.2}), {}), {0.5 / 0.8, 0.3 / 0.8, 0});
}

// Penalty 2 on tokens 0 and 2: a positive logit halves, a negative one doubles; once per token.
TEST(Sampler, RepetitionPenalty) {
  SamplingOptions o = opts(0.0);
  o.repetition_penalty = 2.0;
  Sampler s(o);
  const std::vector<float> l = {3.0f, 2.0f, -1.0f};
  const std::vector<std::int64_t> history = {0, 2, 0, 0};
  EXPECT_EQ(s.sample(l, history), 1);  // 3/2 = 1.5 < 2
  SamplingOptions p = opts();
  p.repetition_penalty = 2.0;
  Sampler t(p);
  const double z = std::exp(1.5) + std::exp(2.0) + std::exp(-2.0);
  expect_dist(t.distribution(l, history), {std::exp(1.5) / z, std::exp(2.0) / z, std::exp(-2.0) / z});
}

// --repeat-last-n N: the penalty sees the last N tokens of the history, the same distribution
// as the whole-history penalty given only those tokens; 0 turns it off; -1 and N past the
// history's length see all of it.
TEST(Sampler, RepeatLastNPenalizesTheWindowOnly) {
  const std::vector<float> l = {1.0f, -0.5f, 2.0f, 0.25f, 1.5f, -1.0f};
  const std::vector<std::int64_t> history = {0, 1, 2, 3, 4, 2};
  auto dist = [&](std::int64_t last_n, std::span<const std::int64_t> h, double penalty = 2.5) {
    SamplingOptions o = opts();
    o.repetition_penalty = penalty;
    o.repeat_last_n = last_n;
    Sampler s(o);
    return s.distribution(l, h);
  };
  const std::vector<std::int64_t> tail = {3, 4, 2};
  expect_dist(dist(3, history), dist(-1, tail));
  expect_dist(dist(0, history), dist(-1, history, 1.0));
  expect_dist(dist(6, history), dist(-1, history));
  expect_dist(dist(100, history), dist(-1, history));
  // The window matters: token 0 is penalised with the whole history, not with the last three.
  EXPECT_LT(dist(-1, history)[0], dist(3, history)[0]);
  SamplingOptions bad = opts();
  bad.repeat_last_n = -2;
  try {
    validate_sampling_options(bad);
    ADD_FAILURE() << "repeat_last_n -2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("repeat_last_n = -2"), std::string::npos) << e.what();
  }
}

// OpenAI's penalties count the tokens the sampler picked, not the history it is given:
// logit -= frequency x count + presence x (count > 0).
TEST(Sampler, PresenceAndFrequencyPenaltiesCountPickedTokens) {
  SamplingOptions o = opts(0.0);
  o.presence_penalty = 0.5;
  Sampler s(o);
  const std::vector<float> l = {2.0f, 1.7f, 1.0f};
  const std::vector<std::int64_t> history = {1, 1, 1};  // the prompt's tokens: not counted
  EXPECT_EQ(s.sample(l, history), 0);                   // nothing picked yet
  EXPECT_EQ(s.sample(l, history), 1);                   // 2.0 - 0.5 = 1.5 < 1.7
  EXPECT_EQ(s.sample(l, history), 0);                   // 1.5 and 1.2: presence counts once
  SamplingOptions f = opts();
  f.frequency_penalty = 0.25;
  f.presence_penalty = 0.1;
  f.seed = 3;
  Sampler t(f);
  const std::vector<float> flat = {0.0f, 0.0f, 0.0f};
  std::vector<int> count(3, 0);
  for (int i = 0; i < 4; ++i) ++count[static_cast<std::size_t>(t.sample(flat, {}))];
  std::vector<double> w(3);
  double z = 0;
  for (std::size_t i = 0; i < 3; ++i) z += w[i] = std::exp(-(0.25 * count[i] + (count[i] > 0 ? 0.1 : 0.0)));
  expect_dist(t.distribution(flat, {}), {w[0] / z, w[1] / z, w[2] / z});
  // Negative values favour repeats; with both at 0 nothing changes.
  SamplingOptions r = opts(0.0);
  r.frequency_penalty = -1.0;
  Sampler u(r);
  const std::vector<float> first = {1.0f, 1.5f}, second = {2.0f, 1.5f};
  EXPECT_EQ(u.sample(first, {}), 1);
  EXPECT_EQ(u.sample(second, {}), 1);  // 1.5 + 1 > 2
}

// logit_bias adds to the logits before everything else: softmax(l + b), a token twice gets both
// biases, -inf bans a token even in greedy, and the repetition penalty sees the biased score.
TEST(Sampler, LogitBiasAddsBeforeThePenalties) {
  SamplingOptions o = opts();
  o.logit_bias = {{0, -std::log(2.0f)}, {2, 0.5f}, {2, std::log(2.0f) - 0.5f}};
  Sampler s(o);
  // p = (0.5, 0.3, 0.2) with weights halved for 0 and doubled for 2: (0.25, 0.3, 0.4) / 0.95.
  expect_dist(s.distribution(logits_of({0.5, 0.3, 0.2}), {}), {0.25 / 0.95, 0.3 / 0.95, 0.4 / 0.95});
  SamplingOptions g = opts(0.0);
  g.logit_bias = {{1, -INFINITY}};
  Sampler greedy(g);
  const std::vector<float> l = {1.0f, 3.0f, 2.0f};
  EXPECT_EQ(greedy.sample(l, {}), 2);
  expect_dist(greedy.distribution(l, {}), {0, 0, 1});
  // Bias first: (3 - 2) / 2 = 0.5 beats token 0's 0 (the penalty first would give 1.5 - 2 < 0).
  g.logit_bias = {{1, -2.0f}};
  g.repetition_penalty = 2.0;
  Sampler penalized(g);
  EXPECT_EQ(penalized.sample(std::vector<float>{0.0f, 3.0f}, std::vector<std::int64_t>{1}), 1);
  // Every token banned, and a token past the vocabulary, are refused by name.
  SamplingOptions all = opts();
  all.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
  Sampler none(all);
  try {
    none.sample(std::vector<float>{0.0f, 1.0f}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("every token's logit is -inf"), std::string::npos) << e.what();
  }
  SamplingOptions past = opts();
  past.logit_bias = {{3, 1.0f}};
  Sampler outside(past);
  try {
    outside.sample(std::vector<float>{0.0f, 1.0f, 2.0f}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "sampling option logit_bias: token 3 is outside the vocabulary (3 tokens)");
  }
}

TEST(Sampler, SameSeedSameTokensAndFrequenciesFollowTheDistribution) {
  SamplingOptions o = opts();
  o.seed = 7;
  Sampler a(o), b(o);
  const auto l = logits_of({0.6, 0.3, 0.1});
  std::vector<int> counts(3, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const auto t = a.sample(l, {});
    EXPECT_EQ(t, b.sample(l, {}));
    ++counts[static_cast<std::size_t>(t)];
  }
  // Binomial standard deviations are below 0.0035 here: 0.015 is more than 4 of them.
  EXPECT_NEAR(counts[0] / double(n), 0.6, 0.015);
  EXPECT_NEAR(counts[1] / double(n), 0.3, 0.015);
  EXPECT_NEAR(counts[2] / double(n), 0.1, 0.015);
  SamplingOptions other = o;
  other.seed = 8;
  Sampler c(other), d(o);
  int differ = 0;
  for (int i = 0; i < 50; ++i) differ += c.sample(l, {}) != d.sample(l, {});
  EXPECT_GT(differ, 0);
}

// Top-n-sigma: scores {0, 1, 2, 3, 10} have mean 3.2 and (population) standard deviation
// sqrt(12.56) = 3.544; a masked token counts in neither. n = 1 keeps 10 only (floor 6.46), n = 2
// keeps 3 and 10 (floor 2.91), at any temperature.
TEST(Sampler, TopNSigmaKeepsScoresNearTheBest) {
  const std::vector<float> l = {0, 1, 2, 3, 10, -INFINITY};
  for (const double t : {1.0, 2.0}) {
    SamplingOptions o = opts(t);
    o.top_n_sigma = 1;
    expect_dist(Sampler(o).distribution(l, {}), {0, 0, 0, 0, 1, 0});
    o.top_n_sigma = 2;
    const double e3 = std::exp(3 / t), e10 = std::exp(10 / t);
    expect_dist(Sampler(o).distribution(l, {}), {0, 0, 0, e3 / (e3 + e10), e10 / (e3 + e10), 0});
    o.top_n_sigma = 0;  // off
    double sum = 0;
    for (int i = 0; i < 5; ++i) sum += std::exp(l[static_cast<std::size_t>(i)] / t);
    std::vector<double> want;
    for (int i = 0; i < 5; ++i) want.push_back(std::exp(l[static_cast<std::size_t>(i)] / t) / sum);
    want.push_back(0);
    expect_dist(Sampler(o).distribution(l, {}), want);
  }
}

// Typical: p = {0.5, 0.3, 0.2} has entropy 1.0297 nats; the surprisals' distances from it are
// 0.336, 0.174, 0.580, so the order is token 1, 0, 2, and the mass before a token decides as in
// top-p (Hugging Face's TypicalLogitsWarper keeps the same tokens).
TEST(Sampler, TypicalKeepsTokensNearTheEntropy) {
  SamplingOptions o = opts();
  o.typical_p = 0.5;
  expect_dist(Sampler(o).distribution(logits_of({0.5, 0.3, 0.2}), {}), {0.5 / 0.8, 0.3 / 0.8, 0});
  o.typical_p = 0.25;  // token 1 alone reaches it, though token 0 is likelier
  expect_dist(Sampler(o).distribution(logits_of({0.5, 0.3, 0.2}), {}), {0, 1, 0});
  o.typical_p = 0.81;
  expect_dist(Sampler(o).distribution(logits_of({0.5, 0.3, 0.2}), {}), {0.5, 0.3, 0.2});
  // After top-k: the entropy is the survivors' ({0.5, 0.3} renormalised: 0.6616 nats; distances
  // 0.156, 0.318), so token 0 comes first now.
  o.top_k = 2;
  o.typical_p = 0.5;
  expect_dist(Sampler(o).distribution(logits_of({0.5, 0.3, 0.2}), {}), {1, 0, 0});
}

// XTC: with p = {0.5, 0.3, 0.15, 0.05} and threshold 0.1, tokens 0, 1 and 2 are top choices and
// only the least of them (2) stays: {0.75, 0.25} over tokens 2 and 3. With probability 0.5 half
// the steps do that. A threshold only one token reaches changes nothing; distribution() leaves
// XTC's random step out.
TEST(Sampler, XtcDropsTheTopChoicesButTheLeast) {
  const auto l = logits_of({0.5, 0.3, 0.15, 0.05});
  const auto frequencies = [&](double probability, double threshold) {
    SamplingOptions o = opts();
    o.seed = 11;
    o.xtc_probability = probability;
    o.xtc_threshold = threshold;
    Sampler s(o);
    expect_dist(s.distribution(l, {}), {0.5, 0.3, 0.15, 0.05});
    std::vector<double> f(4, 0);
    const int n = 20000;
    for (int i = 0; i < n; ++i) f[static_cast<std::size_t>(s.sample(l, {}))] += 1.0 / n;
    return f;
  };
  // Binomial standard deviations are below 0.0036 here: 0.016 is more than 4 of them.
  const auto near = [](const std::vector<double>& got, const std::vector<double>& want) {
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.016) << "token " << i;
  };
  near(frequencies(1, 0.1), {0, 0, 0.75, 0.25});
  near(frequencies(0.5, 0.1), {0.25, 0.15, 0.45, 0.15});
  near(frequencies(1, 0.25), {0, 0.3 / 0.5, 0.15 / 0.5, 0.05 / 0.5});  // tokens 0 and 1: 1 stays
  near(frequencies(1, 0.4), {0.5, 0.3, 0.15, 0.05});                  // token 0 alone
  near(frequencies(0, 0.1), {0.5, 0.3, 0.15, 0.05});                  // off
  // The threshold reads temperature-1 probabilities: at temperature 2 (p ~ sqrt of the above:
  // 0.379, 0.294, 0.208, 0.120) threshold 0.2 still finds tokens 0 and 1 only, so token 0 goes
  // and 1, 2, 3 keep their temperature-2 shares.
  SamplingOptions o = opts(2.0);
  o.seed = 5;
  o.xtc_probability = 1;
  o.xtc_threshold = 0.2;
  Sampler s(o);
  std::vector<double> f(4, 0);
  for (int i = 0; i < 20000; ++i) f[static_cast<std::size_t>(s.sample(l, {}))] += 1.0 / 20000;
  const double r1 = std::sqrt(0.3), r2 = std::sqrt(0.15), r3 = std::sqrt(0.05);
  near(f, {0, r1 / (r1 + r2 + r3), r2 / (r1 + r2 + r3), r3 / (r1 + r2 + r3)});
  // At temperature 1000 the survivors' probabilities are nearly equal, and p^1000 underflows;
  // relative to the likeliest they do not: still tokens 0 and 1 only.
  o.temperature = 1000;
  Sampler hot(o);
  std::vector<double> g(4, 0);
  for (int i = 0; i < 4000; ++i) g[static_cast<std::size_t>(hot.sample(l, {}))] += 1.0 / 4000;
  EXPECT_EQ(g[0], 0.0);
  EXPECT_GT(g[1], 0.2);
  // A threshold above 0.5 takes no draw: the tokens are those of XTC off, seed for seed.
  o = opts();
  o.seed = 9;
  Sampler off(o);
  o.xtc_probability = 1;
  o.xtc_threshold = 0.6;
  Sampler high(o);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(off.sample(l, {}), high.sample(l, {})) << i;
}

// Mirostat 2: p = {1/2, 1/4, 1/8, 1/8} are 1, 2, 3, 3 bits of surprise. tau 1.1 starts at mu
// 2.2: tokens 0 and 1 stay, {2/3, 1/3}; top-k and top-p are ignored. A pick moves mu by eta
// times its surprise's excess over tau: token 0 (log2(3/2) = 0.585 bits) with eta 3 raises mu to
// 3.745, and every token stays; token 1 (log2 3 = 1.585 bits) with eta 2 lowers it to 1.23,
// below token 1's 2 bits: token 0 stays alone.
TEST(Sampler, Mirostat2TracksTheTargetSurprise) {
  const auto l = logits_of({0.5, 0.25, 0.125, 0.125});
  SamplingOptions o = opts();
  o.mirostat = 2;
  o.mirostat_tau = 1.1;
  o.top_k = 1;
  o.top_p = 0.1;
  expect_dist(Sampler(o).distribution(l, {}), {2.0 / 3, 1.0 / 3, 0, 0});
  // Picks forced by a bias that leaves the surprises of the first two tokens as they were.
  for (const auto& [eta, first_pick, after] : std::vector<std::tuple<double, std::int64_t, std::vector<double>>>{
           {3.0, 0, {0.5, 0.25, 0.125, 0.125}}, {2.0, 1, {1, 0, 0, 0}}}) {
    o.mirostat_eta = eta;
    // Seeds until the draw picks first_pick (a third of the draws pick token 1).
    std::uint64_t seed = 0;
    for (; seed < 1000; ++seed) {
      SamplingOptions t = o;
      t.seed = seed;
      if (Sampler(t).sample(l, {}) == first_pick) break;
    }
    ASSERT_LT(seed, 1000u) << "no seed picks token " << first_pick;
    o.seed = seed;
    Sampler picked(o);
    EXPECT_EQ(picked.sample(l, {}), first_pick);
    expect_dist(picked.distribution(l, {}), after);
  }
}

// Mirostat 1 on a Zipf distribution p_i ~ 1 / i^2 over 1000 tokens: the estimated exponent is
// exactly 2, so with tau 3 (mu 6) k = (2^6 / (1 - 1/1000))^(1/2) = 8.004: the 8 likeliest stay.
TEST(Sampler, Mirostat1KeepsTheZipfEstimatesTopK) {
  std::vector<double> p;
  double z = 0;
  for (int i = 1; i <= 1000; ++i) z += 1.0 / (static_cast<double>(i) * i);
  for (int i = 1; i <= 1000; ++i) p.push_back(1.0 / (static_cast<double>(i) * i) / z);
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  SamplingOptions o = opts();
  o.mirostat = 1;
  o.mirostat_tau = 3;
  std::vector<double> want(1000, 0);
  double head = 0;
  for (int i = 0; i < 8; ++i) head += p[static_cast<std::size_t>(i)];
  for (int i = 0; i < 8; ++i) want[static_cast<std::size_t>(i)] = p[static_cast<std::size_t>(i)] / head;
  const std::vector<double> got = Sampler(o).distribution(l, {});
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << "token " << i;
  // tau 2.5 (mu 5): k = sqrt(32.03) = 5.66: 5 stay.
  o.mirostat_tau = 2.5;
  const std::vector<double> five = Sampler(o).distribution(l, {});
  EXPECT_GT(five[4], 0);
  EXPECT_EQ(five[5], 0);
}

SamplingOptions dry(double multiplier, double base, std::int64_t allowed, std::vector<std::int64_t> breakers = {}) {
  SamplingOptions o = opts();
  o.dry_multiplier = multiplier;
  o.dry_base = base;
  o.dry_allowed_length = allowed;
  o.dry_breaker_ids = std::move(breakers);
  return o;
}

// The distribution of equal logits over 10 tokens after scores `penalty` (by token) are taken off.
std::vector<double> softmax_less(const std::vector<double>& penalty) {
  std::vector<double> p;
  double sum = 0;
  for (double x : penalty) sum += std::exp(-x);
  for (double x : penalty) p.push_back(std::exp(-x) / sum);
  return p;
}

// DRY on closed cases: the history ends "... 1 2"; an earlier "1 2" was followed by 3, so 3
// would continue a repeat of 2 tokens and loses multiplier x base^(2 - allowed); "5 1 2" before
// 3 is a repeat of 3 (base^1); a breaker inside the repeat, or as the last token, cuts it; the
// window counts only the last dry_penalty_last_n tokens.
TEST(Sampler, DryPenalisesTheTokenThatContinuesARepeat) {
  const std::vector<float> l(10, 0.0f);
  std::vector<double> pen(10, 0.0);
  pen[3] = 1.0;
  expect_dist(Sampler(dry(1, 2, 2)).distribution(l, std::vector<std::int64_t>{1, 2, 3, 9, 1, 2}), softmax_less(pen));
  pen[3] = 2.0;
  const std::vector<std::int64_t> three = {5, 1, 2, 3, 5, 1, 2};
  expect_dist(Sampler(dry(1, 2, 2)).distribution(l, three), softmax_less(pen));
  pen[3] = 0.5 * 2.0 * 2.0;  // allowed 1: base^(3 - 1), multiplier 0.5
  expect_dist(Sampler(dry(0.5, 2, 1)).distribution(l, three), softmax_less(pen));
  const std::vector<double> none = softmax_less(std::vector<double>(10, 0.0));
  expect_dist(Sampler(dry(1, 2, 2, {1})).distribution(l, three), none);  // 1 breaks "1 2"
  expect_dist(Sampler(dry(1, 2, 2, {2})).distribution(l, three), none);  // the last token breaks
  pen[3] = 1.0;
  expect_dist(Sampler(dry(1, 2, 2, {5})).distribution(l, three), softmax_less(pen));  // "1 2" stays
  expect_dist(Sampler(dry(1, 2, 4)).distribution(l, three), none);                   // shorter than allowed
  SamplingOptions windowed = dry(1, 2, 2);
  windowed.dry_penalty_last_n = 4;  // 3 5 1 2: no earlier 2
  expect_dist(Sampler(windowed).distribution(l, three), none);
  windowed.dry_penalty_last_n = 6;  // 1 2 3 5 1 2: "1 2" then 3
  expect_dist(Sampler(windowed).distribution(l, three), softmax_less(pen));
  // A run of 300 equal tokens: 7 continues a repeat of 299; the penalty stays finite, 7 has no
  // chance left and the others share it.
  const std::vector<std::int64_t> run(300, 7);
  const std::vector<double> d = Sampler(dry(0.8, 1.75, 2)).distribution(l, run);
  EXPECT_EQ(d[7], 0.0);
  EXPECT_NEAR(d[0], 1.0 / 9, 1e-12);
}

// The Z-array walk equals the direct definition (each earlier occurrence of the last token,
// extended backwards token by token while both sides agree and no breaker is crossed; each next
// token keeps its longest match) on random histories over 4 tokens, random breakers, windows.
TEST(Sampler, DryEqualsTheDirectDefinition) {
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = 1 + rng() % 60;
    std::vector<std::int64_t> h(n);
    for (auto& t : h) t = static_cast<std::int64_t>(rng() % 4);
    std::vector<std::int64_t> breakers;
    for (std::int64_t t = 0; t < 4; ++t) {
      if (rng() % 5 == 0) breakers.push_back(t);
    }
    SamplingOptions o = dry(0.7, 1.5, 1 + static_cast<std::int64_t>(rng() % 3), breakers);
    o.dry_penalty_last_n = static_cast<std::int64_t>(rng() % 70) - 1;
    const auto is_breaker = [&](std::int64_t t) { return std::find(breakers.begin(), breakers.end(), t) != breakers.end(); };
    std::vector<std::int64_t> w = h;
    if (o.dry_penalty_last_n >= 0 && w.size() > static_cast<std::size_t>(o.dry_penalty_last_n)) {
      w.erase(w.begin(), w.end() - o.dry_penalty_last_n);
    }
    std::vector<double> pen(4, 0.0);
    std::vector<std::int64_t> longest(4, 0);
    if (w.size() >= 2 && !is_breaker(w.back())) {
      const std::size_t m = w.size();
      for (std::size_t i = 0; i + 1 < m; ++i) {
        if (w[i] != w.back() || is_breaker(w[i + 1])) continue;
        std::size_t len = 1;
        while (len <= i && w[i - len] == w[m - 1 - len] && !is_breaker(w[m - 1 - len])) ++len;
        longest[static_cast<std::size_t>(w[i + 1])] = std::max<std::int64_t>(longest[static_cast<std::size_t>(w[i + 1])], len);
      }
    }
    for (std::size_t t = 0; t < 4; ++t) {
      if (longest[t] >= o.dry_allowed_length) pen[t] = 0.7 * std::pow(1.5, static_cast<double>(longest[t] - o.dry_allowed_length));
    }
    std::vector<double> want;
    double sum = 0;
    for (double x : pen) sum += std::exp(-static_cast<double>(static_cast<float>(x)));
    for (double x : pen) want.push_back(std::exp(-static_cast<double>(static_cast<float>(x))) / sum);
    const std::vector<double> got = Sampler(o).distribution(std::vector<float>(4, 0.0f), h);
    ASSERT_EQ(got.size(), 4u);
    for (std::size_t t = 0; t < 4; ++t) EXPECT_NEAR(got[t], want[t], 1e-6) << "round " << round << " token " << t;
  }
}

// The stages in a given order, against a direct computation in the test: each stage on what
// the ones before left, truncations by the softmax of the current scores, a temperature
// dividing them where it stands. Scores 3, 2, 1, 0, -1 with top_k 4, top_p 0.8, temperature 2:
//  - llama.cpp's order (top_k, top_p, then temperature): top-p at temperature 1 sees
//    softmax(3, 2, 1, 0) = .644, .237, .087, .032 and keeps 2 tokens; then softmax(1.5, 1);
//  - the default order (temperature first): softmax(1.5, 1, .5, 0) = .422, .256, .155, .094
//    keeps 3 tokens.
std::vector<double> softmax_of(const std::vector<double>& x) {
  double mx = -INFINITY, sum = 0;
  for (double v : x) mx = std::max(mx, v);
  std::vector<double> p;
  for (double v : x) sum += p.emplace_back(v == -INFINITY ? 0.0 : std::exp(v - mx));
  for (double& v : p) v /= sum;
  return p;
}

TEST(SamplerOrder, EachStageWorksOnWhatTheOnesBeforeLeft) {
  const std::vector<float> l = {3, 2, 1, 0, -1};
  SamplingOptions o = opts(2.0);
  o.top_k = 4;
  o.top_p = 0.8;
  Sampler hf(o);
  const auto three = softmax_of({1.5, 1, 0.5, -INFINITY, -INFINITY});
  expect_dist(hf.distribution(l, {}), three);
  o.samplers = sampler_order_from_list("top_k;top_p;temperature", "test");
  Sampler llama(o);
  expect_dist(llama.distribution(l, {}), softmax_of({1.5, 1, -INFINITY, -INFINITY, -INFINITY}));
  // The same stages with the temperature first: the default's distribution.
  o.samplers = sampler_order_from_letters("tkp", "test");
  Sampler hot_first(o);
  expect_dist(hot_first.distribution(l, {}), three);
  // A stage left out is not applied: top-k and top-p are set but only the temperature runs.
  o.samplers = sampler_order_from_names({"temperature"}, "test");
  Sampler only_t(o);
  expect_dist(only_t.distribution(l, {}), softmax_of({1.5, 1, 0.5, 0, -0.5}));
  // min-p after the temperature reads the flattened distribution: 0.3 x p_max keeps more.
  o = opts(0.5);
  o.min_p = 0.3;
  o.samplers = sampler_order_from_list("min_p;temperature", "test");
  Sampler cold_after(o);  // at 1: .636, .234, .086, ... >= .191: tokens 0, 1; then scores / 0.5
  expect_dist(cold_after.distribution(l, {}), softmax_of({6, 4, -INFINITY, -INFINITY, -INFINITY}));
  o.samplers = sampler_order_from_list("temperature;min_p", "test");
  Sampler cold_first(o);  // at 0.5: softmax(6, 4, 2, 0, -2) = .867, .117, ... >= .260: token 0 alone
  expect_dist(cold_first.distribution(l, {}), {1, 0, 0, 0, 0});
  // top-n-sigma on the scores as they stand, typical on their softmax (n sigma over 5 scores of
  // sd sqrt(2): 1 sigma keeps 3 and 2; typical 0.5 of softmax(3, 2) keeps the one nearer the
  // entropy, ordered as the default's typical stage).
  o = opts(1.0);
  o.top_n_sigma = 1.0;
  o.samplers = sampler_order_from_names({"top_n_sigma"}, "test");
  Sampler sigma(o);
  expect_dist(sigma.distribution(l, {}), softmax_of({3, 2, -INFINITY, -INFINITY, -INFINITY}));  // floor 3 - 1.414
  // Typical 0.5 of softmax(3, 2) = .731, .269 (entropy .582; surprisals .313, 1.313): token 0 is
  // nearer, and its mass alone passes 0.5.
  o.typical_p = 0.5;
  o.samplers = sampler_order_from_names({"top_n_sigma", "typ_p"}, "test");
  Sampler typical(o);
  expect_dist(typical.distribution(l, {}), {1, 0, 0, 0, 0});
}

// Top-k first (llama.cpp's default order) gathers only the tokens at or above the k-th score;
// the distribution equals the same stages with an inactive stage before top-k (which gathers the
// whole vocabulary), on a large vocabulary with ties at the cut and masked tokens.
TEST(SamplerOrder, TopKFirstGathersOnlyItsSurvivors) {
  std::mt19937 rng(5);
  std::vector<float> l(50000);
  for (float& x : l) x = static_cast<float>(static_cast<int>(rng() % 2000)) / 100.0f;  // many ties
  for (std::size_t i = 0; i < l.size(); i += 7) l[i] = -INFINITY;
  for (const std::int64_t k : {1, 40, 333, 49999, 60000}) {
    SamplingOptions o = opts(0.8);
    o.top_k = k;
    o.top_p = 0.9;
    o.min_p = 0.01;
    o.samplers = sampler_order_from_list("penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", "test");
    Sampler first(o);
    o.samplers = sampler_order_from_list("typ_p;top_k;top_p;min_p;temperature", "test");  // typical 1: no change
    Sampler after(o);
    const std::vector<double> a = first.distribution(l, {}), b = after.distribution(l, {});
    ASSERT_EQ(a.size(), b.size());
    std::size_t kept = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-12) << "k " << k << " token " << i;
      kept += a[i] > 0;
    }
    EXPECT_GE(kept, 1u) << k;
  }
}

// Penalties and DRY run only where listed, and must come before the other stages.
TEST(SamplerOrder, PenaltiesOnlyWhereListedAndFirst) {
  const std::vector<float> l = {2, 1, 0};
  const std::vector<std::int64_t> history = {0};
  SamplingOptions o = opts();
  o.repetition_penalty = 2;
  o.samplers = sampler_order_from_names({"penalties", "temperature"}, "test");
  Sampler with(o);
  expect_dist(with.distribution(l, history), softmax_of({1, 1, 0}));
  o.samplers = sampler_order_from_names({"temperature"}, "test");
  Sampler without(o);
  expect_dist(without.distribution(l, history), softmax_of({2, 1, 0}));
  o.samplers = sampler_order_from_names({"top_k", "penalties"}, "test");
  try {
    Sampler s(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "sampling option samplers = penalties after top_k: expected penalties and dry before the other samplers");
  }
}

// llama.cpp's names and letters; unknown ones named with the known.
TEST(SamplerOrder, NamesAndLettersAreLlamaCpps) {
  EXPECT_EQ(sampler_order_from_letters("edskypmxt", "x"),
            sampler_order_from_list("penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature", "x"));
  EXPECT_EQ(sampler_order_from_names({"typical", "nucleus", "temp", "top-k"}, "x"),
            (std::vector<SamplerStage>{SamplerStage::kTypicalP, SamplerStage::kTopP, SamplerStage::kTemperature, SamplerStage::kTopK}));
  for (const SamplerStage s : sampler_order_from_letters("edskypmxt", "x")) {
    EXPECT_EQ(sampler_order_from_names({std::string(sampler_stage_name(s))}, "x"), std::vector<SamplerStage>{s});
  }
  try {
    sampler_order_from_list("top_k;frobnicate", "--samplers");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--samplers: unknown sampler 'frobnicate' (expected one of penalties, dry, top_n_sigma", 0), 0u)
        << e.what();
  }
  EXPECT_THROW(sampler_order_from_letters("kq", "--sampling-seq"), Error);
  // At most 64 stages (each runs every step; a request could otherwise list a million).
  EXPECT_EQ(sampler_order_from_letters(std::string(kMaxSamplerStages, 'k'), "x").size(), kMaxSamplerStages);
  EXPECT_THROW(sampler_order_from_letters(std::string(kMaxSamplerStages + 1, 'k'), "x"), Error);
  EXPECT_THROW(sampler_order_from_names(std::vector<std::string>(kMaxSamplerStages + 1, "top_k"), "x"), Error);
  SamplingOptions many = opts();
  many.samplers.assign(kMaxSamplerStages + 1, SamplerStage::kTopK);
  EXPECT_THROW(Sampler{many}, Error);
  EXPECT_THROW(sampler_order_from_names({"infill"}, "samplers"), Error);
}

// Dynamic temperature: T - d + 2d (H / ln n)^e (floored at 0), H the entropy of the step's
// softmax, here over three scores computed directly; the same in the default order and where
// an order places the temperature (after top-k 2, over the two that are left).
TEST(SamplerOrder, DynamicTemperatureFollowsTheEntropy) {
  const std::vector<float> l = {2, 1, 0};
  const auto expected = [](const std::vector<double>& x, double t, double d, double e) {
    const std::vector<double> p = softmax_of(x);
    double h = 0;
    for (double q : p) h -= q > 0 ? q * std::log(q) : 0;
    const double lo = std::max(0.0, t - d), hi = t + d;
    const double dyn = lo + (hi - lo) * std::pow(h / std::log(static_cast<double>(x.size())), e);
    std::vector<double> scaled;
    for (double v : x) scaled.push_back(v / dyn);
    return softmax_of(scaled);
  };
  SamplingOptions o = opts(1.0);
  o.dynatemp_range = 0.8;
  o.dynatemp_exponent = 2;
  Sampler dyn(o);
  const auto want = expected({2, 1, 0}, 1.0, 0.8, 2);
  expect_dist(dyn.distribution(l, {}), want);
  EXPECT_LT(want[0], softmax_of({2, 1, 0})[0]);  // (H / ln 3)^2 = .573: T = 1.12, flattened
  const auto sure = expected({6, 0, 0}, 1.0, 0.8, 2);
  expect_dist(dyn.distribution(std::vector<float>{6, 0, 0}, {}), sure);
  EXPECT_GT(sure[0], softmax_of({6, 0, 0})[0]);  // a sure step is sharpened (T near 0.2)
  o.top_k = 2;
  o.samplers = sampler_order_from_names({"top_k", "temperature"}, "test");
  Sampler ordered(o);
  const auto two = expected({2, 1}, 1.0, 0.8, 2);
  expect_dist(ordered.distribution(l, {}), {two[0], two[1], 0});
  // A range past the temperature floors the bottom at 0: a certain step is greedy.
  o = opts(0.5);
  o.dynatemp_range = 1;
  o.dynatemp_exponent = 1;
  Sampler floor(o);
  expect_dist(floor.distribution(std::vector<float>{30, 0, 0}, {}), {1, 0, 0});
}

// XTC where an order puts it reads the probabilities of that place: after top-k 3 of
// logits_of(.5, .3, .15, .05) the survivors are .526, .316, .158 (threshold 0.2 finds tokens 0
// and 1), and before a temperature of 2 XTC's cut is not moved by it.
TEST(SamplerOrder, XtcAtItsPlace) {
  const auto l = logits_of({0.5, 0.3, 0.15, 0.05});
  SamplingOptions o = opts(2.0);
  o.seed = 3;
  o.top_k = 3;
  o.xtc_probability = 1;
  o.xtc_threshold = 0.2;
  o.samplers = sampler_order_from_names({"top_k", "xtc", "temperature"}, "test");
  Sampler s(o);
  std::vector<double> f(4, 0);
  for (int i = 0; i < 20000; ++i) f[static_cast<std::size_t>(s.sample(l, {}))] += 1.0 / 20000;
  const double r1 = std::sqrt(0.3), r2 = std::sqrt(0.15);
  EXPECT_EQ(f[0], 0.0);
  EXPECT_EQ(f[3], 0.0);
  EXPECT_NEAR(f[1], r1 / (r1 + r2), 0.016);
  // After the temperature XTC reads its probabilities: sqrt(.5), sqrt(.3), sqrt(.15) normalised,
  // .431, .333, .236, all at least 0.2: only token 2 stays (at temperature 1 token 2 would not
  // be a top choice, and token 1 would stay beside it).
  o.samplers = sampler_order_from_names({"top_k", "temperature", "xtc"}, "test");
  Sampler late(o);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(late.sample(l, {}), 2);
}

TEST(Sampler, BadOptionsAreRefused) {
  SamplingOptions o = opts();
  o.top_p = 0.0;
  try {
    Sampler s(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "sampling option top_p = 0: expected a number in (0, 1] (1: off)");
  }
  o = opts(-1.0);
  EXPECT_THROW(Sampler{o}, Error);
  o = opts();
  o.top_k = -2;
  EXPECT_THROW(Sampler{o}, Error);
  o = opts();
  o.repetition_penalty = 0;
  EXPECT_THROW(Sampler{o}, Error);
  // Each real-valued option against values outside its range.
  const double nan = NAN, inf = INFINITY;
  for (const auto& [field, bad_values] : std::vector<std::pair<double SamplingOptions::*, std::vector<double>>>{
           {&SamplingOptions::min_p, {1.5, -0.1, nan}},
           {&SamplingOptions::presence_penalty, {2.5, -2.01, nan}},
           {&SamplingOptions::frequency_penalty, {2.5, -2.01, nan}},
           {&SamplingOptions::typical_p, {0.0, 1.5, nan}},
           {&SamplingOptions::xtc_probability, {-0.1, 1.1, nan}},
           {&SamplingOptions::xtc_threshold, {-0.1, 1.1, nan}},
           {&SamplingOptions::top_n_sigma, {nan, inf}},
           {&SamplingOptions::mirostat_tau, {-1, nan, inf}},
           {&SamplingOptions::mirostat_eta, {-0.1, nan}},
           {&SamplingOptions::dry_multiplier, {-1, nan, inf}},
           {&SamplingOptions::dry_base, {0.5, nan, inf}},
           {&SamplingOptions::dynatemp_range, {-0.1, nan, inf}},
           {&SamplingOptions::dynatemp_exponent, {-1, nan, inf}}}) {
    for (const double bad : bad_values) {
      o = opts();
      o.*field = bad;
      EXPECT_THROW(Sampler{o}, Error) << bad;
    }
  }
  o = opts();
  o.typical_p = 0;
  try {
    Sampler s(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "sampling option typical_p = 0: expected a number in (0, 1] (1: off)");
  }
  for (const std::int64_t bad : {0, -5}) {
    o = opts();
    o.dry_allowed_length = bad;
    EXPECT_THROW(Sampler{o}, Error) << bad;
  }
  o = opts();
  o.dry_penalty_last_n = -2;
  EXPECT_THROW(Sampler{o}, Error);
  for (const int bad : {-1, 3}) {
    o = opts();
    o.mirostat = bad;
    EXPECT_THROW(Sampler{o}, Error) << bad;
  }
  for (const auto& bad : std::vector<std::pair<std::int64_t, float>>{{-1, 1.0f}, {2, NAN}, {2, INFINITY}}) {
    o = opts();
    o.logit_bias = {bad};
    EXPECT_THROW(Sampler{o}, Error) << bad.first << " " << bad.second;
  }
}

}  // namespace
}  // namespace staticlm
