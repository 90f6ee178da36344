// Picks the next token from soft-capped logits: greedy, or sampling with temperature, top-k,
// top-p and min-p, after an optional repetition penalty, in Hugging Face's order (penalty,
// temperature, top-k, top-p, min-p). A logit bias (OpenAI's logit_bias, llama.cpp's
// --logit-bias) is added first; OpenAI's presence and frequency penalties (on the tokens this
// sampler has picked, as OpenAI and vLLM count them) follow the repetition penalty. Another
// order of the stages (llama.cpp's --samplers) is SamplingOptions::samplers.
// Deterministic for a given seed.
//
// Ownership: a Sampler owns its random generator and scratch; it is not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sampler_order.h"

namespace staticlm {

struct SamplingOptions {
  double temperature = 1.0;         // 0 means greedy (argmax)
  std::int64_t top_k = 0;           // 0: off
  double top_p = 1.0;               // 1: off
  double min_p = 0.0;               // 0: off
  double repetition_penalty = 1.0;  // 1: off
  // The repetition penalty's window: the last N tokens of the history (llama.cpp's
  // --repeat-last-n); -1: the whole history (Hugging Face's), 0: none (the penalty is off).
  std::int64_t repeat_last_n = -1;
  double presence_penalty = 0.0;    // subtracted once from each token already picked (0: off)
  double frequency_penalty = 0.0;   // subtracted per time a token was picked (0: off)
  // (token, bias) added to the token's logit before anything else; -inf bans it. A token listed
  // twice gets both.
  std::vector<std::pair<std::int64_t, float>> logit_bias;
  // Top-n-sigma (Tang et al., 2024; llama.cpp's --top-nsigma): keep the tokens whose score is
  // within n standard deviations (over the unmasked scores) of the best; <= 0: off. Before the
  // temperature, so the same tokens stay at any temperature.
  double top_n_sigma = -1.0;
  // Locally typical sampling (Meister et al., 2022; Hugging Face's typical_p): keep the tokens
  // whose surprisal is closest to the entropy, up to this mass (1: off).
  double typical_p = 1.0;
  // XTC, "exclude top choices" (llama.cpp's): at a step drawn with this probability, when two or
  // more tokens are at least xtc_threshold likely (at temperature 1, as llama.cpp's chain has it),
  // all but the least likely of them are dropped (0: off; a threshold above 0.5 never finds two).
  double xtc_probability = 0.0;
  double xtc_threshold = 0.1;
  // Mirostat (Basu et al., 2021; llama.cpp's --mirostat): 1 or 2 truncates the distribution so
  // that the reply's surprise (bits per token) tracks mirostat_tau, learning at mirostat_eta;
  // it replaces top-k, top-p, min-p, top-n-sigma, typical and XTC, as in llama.cpp. 0: off.
  int mirostat = 0;
  double mirostat_tau = 5.0;
  double mirostat_eta = 0.1;
  // DRY, "don't repeat yourself" (llama.cpp's, after text-generation-webui): a token that would
  // continue a sequence the history already holds, the match being at least dry_allowed_length
  // tokens, loses dry_multiplier x dry_base^(match - dry_allowed_length) from its score; matches
  // look at the last dry_penalty_last_n tokens (-1: all) and never run through a breaker token
  // (dry_breaker_ids: the tokens whose text holds one of dry_sequence_breakers, filled in by
  // resolve_dry_breakers, runtime/dry_breakers.h). dry_multiplier 0: off.
  double dry_multiplier = 0.0;
  double dry_base = 1.75;
  std::int64_t dry_allowed_length = 2;
  std::int64_t dry_penalty_last_n = -1;
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};
  std::vector<std::int64_t> dry_breaker_ids;  // sorted
  // Dynamic temperature (llama.cpp's --dynatemp-range, after Kalomaze's "entropy sampling"): with a
  // range d > 0 the temperature of a step is T - d + 2d x (H / ln n) ^ dynatemp_exponent (the
  // bottom held at 0), H the entropy of the step's distribution over its n candidates: a sure
  // step is sharpened, an unsure one flattened. 0: off.
  double dynatemp_range = 0.0;
  double dynatemp_exponent = 1.0;
  // The stages in this order (llama.cpp's --samplers; runtime/sampler_order.h), each on what the
  // ones before it left: truncations read the probabilities of the current scores (after a
  // temperature only where one came before), XTC at its place (not at temperature 1), and a stage
  // left out is not applied. Penalties and DRY, where listed, must come before the others. Empty:
  // the default order above. Greedy (temperature 0) and Mirostat ignore the order.
  std::vector<SamplerStage> samplers;
  std::uint64_t seed = 0;
  bool greedy() const { return temperature == 0.0; }
};

// The first option out of its range: its name (the SamplingOptions field, as serve's request
// fields and the C API name it; "logit_bias" for a bias), its value in words and what was
// expected. nullopt when every option is in range.
struct SamplingProblem {
  std::string option, value, expected;
};
std::optional<SamplingProblem> check_sampling_options(const SamplingOptions& options);

// check_sampling_options as kInvalidArgument "sampling option NAME = VALUE: expected ...":
// temperature < 0, top_k < 0, top_p
// outside (0, 1], min_p outside [0, 1], repetition_penalty <= 0, presence or frequency penalty
// outside [-2, 2] (OpenAI's range), repeat_last_n < -1, a logit_bias token < 0 or bias NaN / +inf, typical_p
// outside (0, 1], xtc_probability or xtc_threshold outside [0, 1], mirostat not 0, 1 or 2,
// mirostat_tau or mirostat_eta negative, dry_multiplier negative, dry_base below 1,
// dry_allowed_length below 1, dry_penalty_last_n below -1, or a non-finite value. (A logit_bias token past the vocabulary is refused by sample(), which knows its size.)
void validate_sampling_options(const SamplingOptions& options);

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);

  // The next token. `history`: the tokens the repetition penalty applies to (prompt and output).
  // The token picked counts towards the presence and frequency penalties of later calls.
  std::int64_t sample(std::span<const float> logits, std::span<const std::int64_t> history);

  // The distribution sample() draws from: probabilities [V] (zero for filtered tokens; one-hot
  // on the argmax when greedy), before XTC's random exclusion.
  std::vector<double> distribution(std::span<const float> logits, std::span<const std::int64_t> history);

  const SamplingOptions& options() const { return options_; }

 private:
  // Fills candidates_ (token, probability) with the survivors, summing to 1.
  void filter(std::span<const float> logits, std::span<const std::int64_t> history);
  // filter's stages in options_.samplers' order, from the (biased, penalised) scores.
  void filter_in_order(std::span<const float> scores);
  // The options_.top_k-th largest of the finite scores at or above `floor`, each times `scale`
  // (-inf when fewer): one pass with a heap of k (most scores lose to its least at once).
  double kth_largest(std::span<const float> scores, double scale, float floor);
  // On candidates_ as probabilities: top-p's, min-p's and typical's truncations (typical wants
  // them normalised; it renormalises); normalise() makes them sum to 1.
  void keep_top_p();
  void keep_min_p();
  void keep_typical();
  void normalize();
  // candidates_' values (scores) -> their softmax.
  void softmax();
  // XTC on candidates_ (probabilities), at a step drawn with xtc_probability; its threshold is on
  // the probabilities raised to `t` and renormalised (filter's are at temperature t; XTC's is 1).
  void exclude_top_choices(double t);
  // Mirostat's truncation of candidates_ (all the tokens, by probability) at the current mu_.
  void mirostat_truncate(std::int64_t vocab);
  // DRY's penalties on scores_ from the history.
  void penalize_repeats(std::span<const std::int64_t> history);

  SamplingOptions options_;
  std::mt19937_64 rng_;
  std::vector<float> scores_;
  std::vector<std::pair<std::int64_t, double>> candidates_;
  std::vector<double> value_of_;  // filter_in_order: a candidate's score by token, across a truncation
  double step_temperature_ = 1;   // the temperature filter used (dynamic or not), for XTC
  std::vector<double> best_;  // top-k: a min-heap of the k best scores so far
  std::vector<std::pair<std::int64_t, int>> picked_;  // token, times picked (in first-pick order)
  double mu_ = 0;  // mirostat: the surprise bound, 2 tau at first, learnt from each pick
  std::vector<std::uint8_t> dry_breaker_;  // by token id (up to the largest breaker id)
  std::vector<std::int64_t> reversed_;     // DRY: the window, last token first
  std::vector<std::int64_t> z_;            // DRY: Z-array of reversed_
  std::vector<std::pair<std::int64_t, std::int64_t>> repeats_;  // DRY: (token, longest match)
};

}  // namespace staticlm
