#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "base/error.h"
#include "runtime/argmax.h"

namespace staticlm {

void validate_sampling_options(const SamplingOptions& o) {
  if (const auto p = check_sampling_options(o)) {
    invalid_argument("sampling option " + p->option + " = " + p->value + ": expected " + p->expected);
  }
}

std::optional<SamplingProblem> check_sampling_options(const SamplingOptions& o) {
  std::optional<SamplingProblem> problem;
  auto bad = [&](const std::string& what, double v, const char* expect) {
    std::ostringstream value;
    value << v;
    if (!problem) problem = SamplingProblem{what, value.str(), expect};
  };
  if (!std::isfinite(o.temperature) || o.temperature < 0) bad("temperature", o.temperature, "a number >= 0 (0: greedy)");
  if (o.top_k < 0) bad("top_k", static_cast<double>(o.top_k), "an integer >= 0 (0: off)");
  if (!(o.top_p > 0 && o.top_p <= 1)) bad("top_p", o.top_p, "a number in (0, 1] (1: off)");
  if (!(o.min_p >= 0 && o.min_p <= 1)) bad("min_p", o.min_p, "a number in [0, 1] (0: off)");
  if (!std::isfinite(o.repetition_penalty) || o.repetition_penalty <= 0) {
    bad("repetition_penalty", o.repetition_penalty, "a number > 0 (1: off)");
  }
  if (o.repeat_last_n < -1) bad("repeat_last_n", static_cast<double>(o.repeat_last_n), "an integer >= -1 (-1: every token, 0: none)");
  if (!(o.presence_penalty >= -2 && o.presence_penalty <= 2)) bad("presence_penalty", o.presence_penalty, "a number in [-2, 2] (0: off)");
  if (!(o.frequency_penalty >= -2 && o.frequency_penalty <= 2)) {
    bad("frequency_penalty", o.frequency_penalty, "a number in [-2, 2] (0: off)");
  }
  if (!std::isfinite(o.top_n_sigma)) bad("top_n_sigma", o.top_n_sigma, "a finite number (<= 0: off)");
  if (!(o.typical_p > 0 && o.typical_p <= 1)) bad("typical_p", o.typical_p, "a number in (0, 1] (1: off)");
  if (!(o.xtc_probability >= 0 && o.xtc_probability <= 1)) bad("xtc_probability", o.xtc_probability, "a number in [0, 1] (0: off)");
  if (!(o.xtc_threshold >= 0 && o.xtc_threshold <= 1)) bad("xtc_threshold", o.xtc_threshold, "a number in [0, 1]");
  if (o.mirostat < 0 || o.mirostat > 2) bad("mirostat", o.mirostat, "0 (off), 1 or 2");
  if (!std::isfinite(o.mirostat_tau) || o.mirostat_tau < 0) bad("mirostat_tau", o.mirostat_tau, "a number >= 0");
  if (!std::isfinite(o.mirostat_eta) || o.mirostat_eta < 0) bad("mirostat_eta", o.mirostat_eta, "a number >= 0");
  if (!std::isfinite(o.dry_multiplier) || o.dry_multiplier < 0) bad("dry_multiplier", o.dry_multiplier, "a number >= 0 (0: off)");
  if (!std::isfinite(o.dry_base) || o.dry_base < 1) bad("dry_base", o.dry_base, "a number >= 1");
  if (o.dry_allowed_length < 1) bad("dry_allowed_length", static_cast<double>(o.dry_allowed_length), "an integer >= 1");
  if (o.dry_penalty_last_n < -1) {
    bad("dry_penalty_last_n", static_cast<double>(o.dry_penalty_last_n), "an integer >= -1 (-1: every token, 0: none)");
  }
  if (!std::isfinite(o.dynatemp_range) || o.dynatemp_range < 0) bad("dynatemp_range", o.dynatemp_range, "a number >= 0 (0: off)");
  if (!std::isfinite(o.dynatemp_exponent) || o.dynatemp_exponent < 0) bad("dynatemp_exponent", o.dynatemp_exponent, "a number >= 0");
  if (o.samplers.size() > kMaxSamplerStages) {
    bad("samplers", static_cast<double>(o.samplers.size()), "at most 64 stages (each runs every step)");
  }
  // Penalties and DRY change scores before any truncation (sampler.h): an order that puts them
  // later would mean something this sampler does not do.
  const auto other = std::find_if(o.samplers.begin(), o.samplers.end(),
                                  [](SamplerStage s) { return s != SamplerStage::kPenalties && s != SamplerStage::kDry; });
  for (auto it = other; it != o.samplers.end() && !problem; ++it) {
    if (*it == SamplerStage::kPenalties || *it == SamplerStage::kDry) {
      problem = SamplingProblem{"samplers", std::string(sampler_stage_name(*it)) + " after " + std::string(sampler_stage_name(*other)),
                                "penalties and dry before the other samplers"};
    }
  }
  for (const auto& [token, bias] : o.logit_bias) {
    if (token < 0) bad("logit_bias", static_cast<double>(token), "a token id >= 0");
    if ((std::isnan(bias) || bias == INFINITY) && !problem) {
      std::string value(std::isnan(bias) ? "nan" : "inf");
      value.append(" (token ").append(std::to_string(token)).append(")");
      problem = SamplingProblem{"logit_bias", value, "a finite number or -inf (banned)"};
    }
  }
  return problem;
}

namespace {

// Candidates by value, the larger first (ties: the smaller token id first).
bool by_value(const std::pair<std::int64_t, double>& a, const std::pair<std::int64_t, double>& b) {
  return a.second > b.second || (a.second == b.second && a.first < b.first);
}

// The dynamic temperature (sampler.h) of a step whose scores are `values` (the -inf ones left
// out) at the base temperature o.temperature. H = ln(sum e) - sum(e x) / sum(e), e = exp(x - max),
// is the entropy of their softmax in one pass.
template <class Values, class Value>
double dynamic_temperature(const SamplingOptions& o, const Values& values, Value value) {
  double mx = -INFINITY;
  std::size_t n = 0;
  for (const auto& v : values) {
    const double x = value(v);
    if (x == -INFINITY) continue;
    mx = std::max(mx, x);
    ++n;
  }
  if (n <= 1) return o.temperature;  // one choice: any temperature picks it
  double sum = 0, weighted = 0;
  for (const auto& v : values) {
    const double x = value(v);
    if (x == -INFINITY) continue;
    const double e = std::exp(x - mx);
    sum += e;
    weighted += e * (x - mx);
  }
  const double entropy = std::log(sum) - weighted / sum;
  const double normalized = std::clamp(entropy / std::log(static_cast<double>(n)), 0.0, 1.0);
  const double lo = std::max(0.0, o.temperature - o.dynatemp_range), hi = o.temperature + o.dynatemp_range;
  return lo + (hi - lo) * std::pow(normalized, o.dynatemp_exponent);
}

}  // namespace

Sampler::Sampler(const SamplingOptions& options) : options_(options), rng_(options.seed) {
  validate_sampling_options(options);
  mu_ = 2 * options.mirostat_tau;
  for (const std::int64_t id : options.dry_breaker_ids) {
    if (id < 0) continue;
    if (static_cast<std::size_t>(id) >= dry_breaker_.size()) dry_breaker_.resize(static_cast<std::size_t>(id) + 1, 0);
    dry_breaker_[static_cast<std::size_t>(id)] = 1;
  }
}

void Sampler::penalize_repeats(std::span<const std::int64_t> history) {
  const auto last = static_cast<std::size_t>(options_.dry_penalty_last_n);
  const auto window = options_.dry_penalty_last_n >= 0 && history.size() > last ? history.last(last) : history;
  const std::size_t n = window.size();
  if (n < 2) return;
  const auto breaker = [this](std::int64_t t) {
    return t >= 0 && static_cast<std::size_t>(t) < dry_breaker_.size() && dry_breaker_[static_cast<std::size_t>(t)] != 0;
  };
  // The tail a match may cover: back from the last token to the first breaker.
  std::size_t tail = 0;
  while (tail < n && !breaker(window[n - 1 - tail])) ++tail;
  if (tail == 0) return;  // the last token is a breaker
  // Z-array of the reversed window: z_[k] is how far the text ending at n-1-k agrees, backwards,
  // with the text ending at the last token, i.e. the length of the match whose next token is
  // window[n-k] (O(n) in all, where comparing each match token by token is O(n^2) on a run).
  reversed_.assign(window.rbegin(), window.rend());
  z_.assign(n, 0);
  for (std::size_t k = 1, l = 0, r = 0; k < n; ++k) {
    std::size_t z = 0;
    if (k < r) z = std::min(r - k, static_cast<std::size_t>(z_[k - l]));
    while (k + z < n && reversed_[z] == reversed_[k + z]) ++z;
    if (k + z > r) {
      l = k;
      r = k + z;
    }
    z_[k] = static_cast<std::int64_t>(z);
  }
  repeats_.clear();
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t match = std::min(static_cast<std::size_t>(z_[k]), tail);
    if (match < static_cast<std::size_t>(options_.dry_allowed_length)) continue;
    const std::int64_t next = reversed_[k - 1];
    if (!breaker(next)) repeats_.emplace_back(next, static_cast<std::int64_t>(match));
  }
  // Each token once, with its longest match.
  std::sort(repeats_.begin(), repeats_.end(), [](const auto& a, const auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
  repeats_.erase(std::unique(repeats_.begin(), repeats_.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                 repeats_.end());
  // The exponent is capped where the penalty would leave float's range, and so is the penalty (a
  // long repeat, or a huge multiplier, is penalised as hard as a float allows, not to -inf).
  const double max_exponent = options_.dry_base > 1.000001 ? 88.72 / std::log(options_.dry_base) : 1e9;
  const auto v = static_cast<std::int64_t>(scores_.size());
  for (const auto& [token, match] : repeats_) {
    if (token < 0 || token >= v) continue;
    const double exponent = std::min(static_cast<double>(match - options_.dry_allowed_length), max_exponent);
    const double penalty = std::min(options_.dry_multiplier * std::pow(options_.dry_base, exponent), 3.0e38);
    scores_[static_cast<std::size_t>(token)] -= static_cast<float>(penalty);
  }
}

void Sampler::filter(std::span<const float> logits, std::span<const std::int64_t> history) {
  const std::int64_t v = static_cast<std::int64_t>(logits.size());
  // One vectorized pass for the maximum and any NaN or +Inf (E2B: 262144 logits a token; the
  // scalar passes this replaced took 0.5 ms). NaN or +Inf has no argmax or softmax that means
  // anything (-Inf is a masked token); they come from non-finite weights or activations, so say
  // so instead of returning an arbitrary token.
  const MaxScan scan = scan_max(logits);
  if (scan.non_finite) {
    const auto non_finite = [](float x) { return std::isnan(x) || x == INFINITY; };
    const auto first = std::find_if(logits.begin(), logits.end(), non_finite);
    const std::int64_t bad = std::count_if(first, logits.end(), non_finite);
    invalid_file("the model's logits hold " + std::to_string(bad) + " NaN or +Inf values of " + std::to_string(v) +
                 " (first at token " + std::to_string(first - logits.begin()) +
                 "): the checkpoint's weights or the inputs hold non-finite values");
  }
  // The scores: the logits themselves, or a copy that the bias and penalties change.
  std::span<const float> scores = logits;
  float top = v > 0 ? scan.max : 0.0f;
  // With an order, the penalties and DRY apply where it lists them (always first, as checked).
  const bool ordered = !options_.samplers.empty();
  const auto listed = [&](SamplerStage s) {
    return !ordered || std::find(options_.samplers.begin(), options_.samplers.end(), s) != options_.samplers.end();
  };
  const bool penalties = listed(SamplerStage::kPenalties) &&
                         (options_.repetition_penalty != 1.0 || options_.presence_penalty != 0 || options_.frequency_penalty != 0);
  const bool dry = listed(SamplerStage::kDry) && options_.dry_multiplier > 0;
  if (!options_.logit_bias.empty() || penalties || dry) {
    scores_.assign(logits.begin(), logits.end());
    for (const auto& [t, bias] : options_.logit_bias) {
      if (t >= v) {
        invalid_argument("sampling option logit_bias: token " + std::to_string(t) + " is outside the vocabulary (" +
                         std::to_string(v) + " tokens)");
      }
      scores_[static_cast<std::size_t>(t)] += bias;
    }
    // Repetition penalty (once per distinct token of the window): divide positive scores,
    // multiply negative ones.
    if (penalties && options_.repetition_penalty != 1.0) {
      const float pen = static_cast<float>(options_.repetition_penalty);
      const auto last = static_cast<std::size_t>(options_.repeat_last_n);
      const auto window = options_.repeat_last_n >= 0 && history.size() > last ? history.last(last) : history;
      std::vector<std::int64_t> seen(window.begin(), window.end());
      std::sort(seen.begin(), seen.end());
      seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
      for (std::int64_t t : seen) {
        if (t < 0 || t >= v) continue;
        float& s = scores_[static_cast<std::size_t>(t)];
        s = s < 0 ? s * pen : s / pen;
      }
    }
    // Presence and frequency penalties on what this sampler picked (OpenAI: logit -= frequency x
    // count + presence x (count > 0)).
    if (penalties && (options_.presence_penalty != 0 || options_.frequency_penalty != 0)) {
      for (const auto& [t, count] : picked_) {
        if (t < 0 || t >= v) continue;
        scores_[static_cast<std::size_t>(t)] -=
            static_cast<float>(options_.frequency_penalty * count + options_.presence_penalty);
      }
    }
    if (dry) penalize_repeats(history);
    scores = scores_;
    top = v > 0 ? scan_max(scores).max : 0.0f;
  }
  candidates_.clear();
  if (top == -INFINITY) invalid_argument("sampling: every token's logit is -inf (logit_bias or the response format bans them all)");
  const bool mirostat = options_.mirostat != 0;  // truncates on its own, after the softmax
  const auto greedy = [&] { candidates_.emplace_back(first_index_of(scores, top), 1.0); };  // the first maximum, as torch.argmax
  if (options_.greedy()) return greedy();
  if (ordered && !mirostat) return filter_in_order(scores);
  // A temperature so small that the scaled scores overflow (say 5e-324) is its limit, greedy;
  // so is a dynamic temperature of 0.
  step_temperature_ = options_.temperature;
  if (options_.dynatemp_range > 0 && !mirostat) {
    step_temperature_ = dynamic_temperature(options_, scores, [](float x) { return static_cast<double>(x); });
  }
  const double inv_t = 1.0 / step_temperature_;
  if (!std::isfinite(inv_t) || (std::isfinite(top) && !std::isfinite(top * inv_t))) return greedy();
  // Top-n-sigma: a floor under the scores, from their mean and (population) standard deviation
  // over the tokens that can be picked; temperature-free, so applied to the unscaled scores.
  float sigma_floor = -INFINITY;
  if (options_.top_n_sigma > 0 && !mirostat) {
    double sum = 0, sum_sq = 0;
    std::int64_t n = 0;
    for (const float x : scores) {
      if (x == -INFINITY) continue;
      sum += x;
      sum_sq += static_cast<double>(x) * x;
      ++n;
    }
    const double mean = sum / static_cast<double>(n);
    const double sd = std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean));
    sigma_floor = static_cast<float>(top - options_.top_n_sigma * sd);
  }
  // Masked tokens (-inf: a response format, a ban) have no chance: left out, so that top-k and
  // top-p sort only the tokens that can be picked (a JSON constraint masks nearly all of them),
  // and no rounding can fall through to one. top-k keeps every token scoring at least the k-th
  // score (ties included, as upstream): that score is found first, in one pass with a heap of
  // k scores (most scores lose to its least at once), and only the tokens at or above it are
  // gathered.
  double cut = -INFINITY;
  if (options_.top_k > 0 && options_.top_k < v && !mirostat) cut = kth_largest(scores, inv_t, sigma_floor);
  for (std::int64_t i = 0; i < v; ++i) {
    const float x = scores[static_cast<std::size_t>(i)];
    if (x == -INFINITY || x < sigma_floor) continue;
    const double y = static_cast<double>(x) * inv_t;
    if (y >= cut) candidates_.emplace_back(i, y);
  }
  softmax();  // over the survivors
  if (mirostat) {
    mirostat_truncate(v);
    return;
  }
  if (options_.top_p < 1.0) keep_top_p();
  if (options_.min_p > 0) keep_min_p();
  normalize();
  if (options_.typical_p < 1.0) keep_typical();
}

void Sampler::keep_top_p() {
  // Keep a token while the probability mass strictly before it is below top_p. Only the most
  // likely tokens need an order: the 256 most likely are put first and sorted, and the rest is
  // sorted only when the cut falls past them (without top-k, a peaked distribution would
  // otherwise sort the whole vocabulary for a few tokens).
  const auto first = candidates_.begin();
  const std::size_t k = std::min<std::size_t>(candidates_.size(), 256);
  std::nth_element(first, first + static_cast<std::ptrdiff_t>(k), candidates_.end(), by_value);
  std::sort(first, first + static_cast<std::ptrdiff_t>(k), by_value);
  double before = 0;
  std::size_t keep = 0;
  while (keep < candidates_.size() && (keep == 0 || before < options_.top_p)) {
    if (keep == k) std::sort(first + static_cast<std::ptrdiff_t>(k), candidates_.end(), by_value);
    before += candidates_[keep++].second;
  }
  candidates_.resize(keep);
}

void Sampler::keep_min_p() {
  // Drop tokens less likely than min_p times the most likely one (which always stays).
  double top = 0;
  for (const auto& c : candidates_) top = std::max(top, c.second);
  const double floor = options_.min_p * top;
  candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(), [floor](const auto& c) { return c.second < floor; }),
                    candidates_.end());
}

void Sampler::normalize() {
  double total = 0;
  for (const auto& c : candidates_) total += c.second;
  for (auto& c : candidates_) c.second /= total;
}

void Sampler::keep_typical() {
  // Order by |surprisal - entropy| of the (normalised) distribution, and keep tokens while the
  // mass before them is below typical_p, as top-p does.
  if (candidates_.size() <= 1) return;
  double entropy = 0;
  for (const auto& c : candidates_) entropy -= c.second > 0 ? c.second * std::log(c.second) : 0.0;
  auto distance = [entropy](double p) { return std::abs(-std::log(p) - entropy); };
  std::sort(candidates_.begin(), candidates_.end(), [&](const auto& a, const auto& b) {
    const double da = distance(a.second), db = distance(b.second);
    return da < db || (da == db && a.first < b.first);
  });
  double before = 0;
  std::size_t keep = 0;
  while (keep < candidates_.size() && (keep == 0 || before < options_.typical_p)) before += candidates_[keep++].second;
  candidates_.resize(keep);
  normalize();
}

double Sampler::kth_largest(std::span<const float> scores, double scale, float floor) {
  const auto k = static_cast<std::size_t>(options_.top_k);
  best_.clear();
  for (const float x : scores) {
    if (x == -INFINITY || x < floor) continue;
    const double y = static_cast<double>(x) * scale;
    if (best_.size() < k) {
      best_.push_back(y);
      std::push_heap(best_.begin(), best_.end(), std::greater<>());
    } else if (y > best_.front()) {
      std::pop_heap(best_.begin(), best_.end(), std::greater<>());
      best_.back() = y;
      std::push_heap(best_.begin(), best_.end(), std::greater<>());
    }
  }
  return best_.size() == k ? best_.front() : -INFINITY;  // fewer finite scores than k: all stay
}

void Sampler::filter_in_order(std::span<const float> scores) {
  // candidates_ hold (token, score): the scores, divided by any temperature met so far. A stage
  // that truncates by probability works on their softmax and gets the survivors' scores back
  // from value_of_ (a truncation changes no score).
  // When top-k is the first stage that does anything (llama.cpp's default order, penalties and
  // DRY applied already), only the tokens at or above the k-th score are gathered, found as the
  // default order finds it: the top-k stage then keeps them all (ties included), as it would
  // have kept them from the whole vocabulary, without sorting 262,144 candidates each step.
  double cut = -INFINITY;
  for (const SamplerStage stage : options_.samplers) {
    if (stage == SamplerStage::kPenalties || stage == SamplerStage::kDry) continue;
    if (stage == SamplerStage::kTopNSigma && !(options_.top_n_sigma > 0)) continue;
    if (stage == SamplerStage::kTopK && options_.top_k > 0 && static_cast<std::size_t>(options_.top_k) < scores.size()) {
      cut = kth_largest(scores, 1.0, -INFINITY);
    }
    break;
  }
  candidates_.clear();
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] != -INFINITY && scores[i] >= cut) candidates_.emplace_back(static_cast<std::int64_t>(i), scores[i]);
  }
  value_of_.resize(scores.size());
  const auto to_probabilities = [this] {
    for (const auto& c : candidates_) value_of_[static_cast<std::size_t>(c.first)] = c.second;
    softmax();
  };
  // A truncation on the softmax; the survivors keep their scores.
  const auto by_probability = [&](auto keep) {
    to_probabilities();
    keep();
    for (auto& c : candidates_) c.second = value_of_[static_cast<std::size_t>(c.first)];
  };
  for (const SamplerStage stage : options_.samplers) {
    if (candidates_.size() <= 1) break;
    switch (stage) {
      case SamplerStage::kPenalties:
      case SamplerStage::kDry:
        break;  // applied to the scores (they come first)
      case SamplerStage::kTopNSigma:
        if (options_.top_n_sigma > 0) {
          double sum = 0, sum_sq = 0, top = -INFINITY;
          for (const auto& c : candidates_) {
            sum += c.second;
            sum_sq += c.second * c.second;
            top = std::max(top, c.second);
          }
          const double n = static_cast<double>(candidates_.size()), mean = sum / n;
          const double floor = top - options_.top_n_sigma * std::sqrt(std::max(0.0, sum_sq / n - mean * mean));
          std::erase_if(candidates_, [floor](const auto& c) { return c.second < floor; });
        }
        break;
      case SamplerStage::kTopK:
        if (options_.top_k > 0 && static_cast<std::size_t>(options_.top_k) < candidates_.size()) {
          const auto kth = candidates_.begin() + (options_.top_k - 1);
          std::nth_element(candidates_.begin(), kth, candidates_.end(), by_value);
          const double cut = kth->second;  // ties with the k-th stay, as in the default order
          std::erase_if(candidates_, [cut](const auto& c) { return c.second < cut; });
        }
        break;
      case SamplerStage::kTopP:
        if (options_.top_p < 1.0) by_probability([this] { keep_top_p(); });
        break;
      case SamplerStage::kMinP:
        if (options_.min_p > 0) by_probability([this] { keep_min_p(); });
        break;
      case SamplerStage::kTypicalP:
        if (options_.typical_p < 1.0) by_probability([this] { keep_typical(); });
        break;
      case SamplerStage::kXtc:  // on the probabilities of this place
        if (options_.xtc_probability > 0) by_probability([this] { exclude_top_choices(1.0); });
        break;
      case SamplerStage::kTemperature: {
        double t = options_.temperature;
        if (options_.dynatemp_range > 0) t = dynamic_temperature(options_, candidates_, [](const auto& c) { return c.second; });
        const double inv_t = 1.0 / t;
        double top = -INFINITY;
        for (const auto& c : candidates_) top = std::max(top, c.second);
        if (!std::isfinite(inv_t) || !std::isfinite(top * inv_t)) {  // 0, or so small it overflows: greedy
          const auto best = *std::min_element(candidates_.begin(), candidates_.end(), by_value);
          candidates_.assign(1, best);
        } else {
          for (auto& c : candidates_) c.second *= inv_t;
        }
        break;
      }
    }
  }
  softmax();
}

void Sampler::softmax() {
  double mx = -INFINITY;
  for (const auto& c : candidates_) mx = std::max(mx, c.second);
  double sum = 0;
  for (auto& c : candidates_) sum += (c.second = std::exp(c.second - mx));
  for (auto& c : candidates_) c.second /= sum;
}

void Sampler::mirostat_truncate(std::int64_t vocab) {
  // Only mirostat 1's head needs an order (the vocabulary is 262,144 tokens); the draw takes the
  // survivors in any fixed order.
  const auto by_p = [](const auto& a, const auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); };
  std::size_t keep = candidates_.size();
  if (options_.mirostat == 2) {
    // The tokens more surprising than mu bits go (the likeliest always stays).
    const auto kept = std::partition(candidates_.begin(), candidates_.end(),
                                     [this](const auto& c) { return -std::log2(c.second) <= mu_; });
    keep = static_cast<std::size_t>(kept - candidates_.begin());
    if (keep == 0) {
      std::iter_swap(candidates_.begin(), std::min_element(candidates_.begin(), candidates_.end(), by_p));
      keep = 1;
    }
  } else if (candidates_.size() > 1) {
    // Mirostat 1: estimate the Zipf exponent s of the 100 likeliest tokens (least squares of
    // ln(p_i / p_i+1) against ln((i + 2) / (i + 1))), then keep the k tokens whose expected
    // surprise is mu: k = (eps 2^mu / (1 - V^-eps))^(1/s), eps = s - 1.
    const std::size_t head = std::min<std::size_t>(candidates_.size(), 100);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(head), candidates_.end(), by_p);
    double sum_tb = 0, sum_tt = 0;
    for (std::size_t i = 0; i + 1 < head; ++i) {
      if (candidates_[i + 1].second <= 0) break;
      const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
      sum_tb += t * std::log(candidates_[i].second / candidates_[i + 1].second);
      sum_tt += t * t;
    }
    const double s = sum_tb / sum_tt, eps = s - 1;
    const double k = std::pow(eps * std::exp2(mu_) / (1 - std::pow(static_cast<double>(vocab), -eps)), 1 / s);
    // k is a count: a flat head (s = 0) gives 0 or infinity, 0/0 gives NaN; at least one token
    // stays (s = 0 makes it greedy, as llama.cpp), and a k past the candidates keeps them all.
    if (std::isfinite(k) && k < static_cast<double>(candidates_.size())) {
      keep = std::max<std::size_t>(1, static_cast<std::size_t>(k));
      if (keep > head) {
        std::nth_element(candidates_.begin() + static_cast<std::ptrdiff_t>(head), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                         candidates_.end(), by_p);
      }
    }
  }
  candidates_.resize(keep);
  double total = 0;
  for (const auto& c : candidates_) total += c.second;
  for (auto& c : candidates_) c.second /= total;
}

void Sampler::exclude_top_choices(double t) {
  // A threshold above 0.5 never finds two tokens: no draw then, as llama.cpp (the stream of
  // draws stays that of XTC off).
  if (options_.xtc_probability <= 0 || options_.xtc_threshold > 0.5 || candidates_.size() < 2) return;
  const double u = static_cast<double>(rng_() >> 11) * 0x1p-53;
  if (u >= options_.xtc_probability) return;
  // The threshold is on the survivors' probabilities at temperature 1, as llama.cpp's chain runs
  // XTC before its temperature: p^T renormalised (our probabilities are at temperature T), taken
  // relative to the likeliest so that a high T cannot underflow them all to 0. That is monotonic
  // in p, so it becomes one cut on our probabilities: p^T / norm >= threshold.
  double best = 0;
  for (const auto& c : candidates_) best = std::max(best, c.second);
  const double log_best = std::log(best);
  double norm = 0;
  for (const auto& c : candidates_) norm += c.second > 0 ? std::exp(t * (std::log(c.second) - log_best)) : 0.0;
  const double cut = std::exp(log_best + std::log(options_.xtc_threshold * norm) / t);
  // The top choices; all but the least likely of them go.
  std::int64_t kept = -1, count = 0;
  double least = INFINITY;
  for (const auto& c : candidates_) {
    if (c.second < cut) continue;
    ++count;
    if (c.second < least || (c.second == least && c.first > kept)) {
      least = c.second;
      kept = c.first;
    }
  }
  if (count < 2) return;
  candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(), [&](const auto& c) { return c.first != kept && c.second >= cut; }),
                    candidates_.end());
  double total = 0;
  for (const auto& c : candidates_) total += c.second;
  for (auto& c : candidates_) c.second /= total;
}

std::int64_t Sampler::sample(std::span<const float> logits, std::span<const std::int64_t> history) {
  if (logits.empty()) invalid_argument("sampler: empty logits");
  filter(logits, history);
  const bool mirostat = options_.mirostat != 0 && !options_.greedy();
  if (!mirostat && options_.samplers.empty()) exclude_top_choices(step_temperature_);  // an order places XTC itself
  // If rounding leaves u at or above the total: the last candidate that has a chance (a capped
  // DRY penalty can leave candidates at probability 0).
  auto fallback = std::find_if(candidates_.rbegin(), candidates_.rend(), [](const auto& c) { return c.second > 0; });
  if (fallback == candidates_.rend()) fallback = candidates_.rbegin();
  std::int64_t token = fallback->first;
  double p = fallback->second;
  if (candidates_.size() == 1) {
    token = candidates_.front().first;
    p = candidates_.front().second;
  } else {
    // 53 random bits -> u in [0, 1); walk the cumulative distribution.
    const double u = static_cast<double>(rng_() >> 11) * 0x1p-53;
    double acc = 0;
    for (const auto& c : candidates_) {
      acc += c.second;
      if (u < acc) {
        token = c.first;
        p = c.second;
        break;
      }
    }
  }
  // Mirostat learns: mu moves against the pick's surprise's excess over tau.
  if (mirostat && p > 0) mu_ -= options_.mirostat_eta * (-std::log2(p) - options_.mirostat_tau);
  if (options_.presence_penalty != 0 || options_.frequency_penalty != 0) {
    const auto it = std::find_if(picked_.begin(), picked_.end(), [token](const auto& p) { return p.first == token; });
    if (it != picked_.end()) {
      ++it->second;
    } else {
      picked_.emplace_back(token, 1);
    }
  }
  return token;
}

std::vector<double> Sampler::distribution(std::span<const float> logits, std::span<const std::int64_t> history) {
  if (logits.empty()) invalid_argument("sampler: empty logits");
  filter(logits, history);
  std::vector<double> p(logits.size(), 0.0);
  for (const auto& c : candidates_) p[static_cast<std::size_t>(c.first)] = c.second;
  return p;
}

}  // namespace staticlm
