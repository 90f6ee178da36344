#include "api/generate_params.h"

#include <cmath>

#include "base/error.h"
#include "runtime/dry_breakers.h"
#include "runtime/generation_defaults.h"
#include "runtime/sampler_order.h"
#include "text/grammar_constraint.h"
#include "text/json_constraint.h"
#include "text/thought_first_constraint.h"

namespace staticlm::api {

namespace {

// The sampling fields params sets, over `s`.
void apply_given_sampling(const GenerateParams& p, SamplingOptions& s) {
  if (p.temperature) s.temperature = *p.temperature;
  if (p.top_k) s.top_k = *p.top_k;
  if (p.top_p) s.top_p = *p.top_p;
  if (p.min_p) s.min_p = *p.min_p;
  if (p.repetition_penalty) s.repetition_penalty = *p.repetition_penalty;
  if (p.repeat_last_n) s.repeat_last_n = *p.repeat_last_n;
  if (p.presence_penalty) s.presence_penalty = *p.presence_penalty;
  if (p.frequency_penalty) s.frequency_penalty = *p.frequency_penalty;
  if (p.top_n_sigma) s.top_n_sigma = *p.top_n_sigma;
  if (p.typical_p) s.typical_p = *p.typical_p;
  if (p.xtc_probability) s.xtc_probability = *p.xtc_probability;
  if (p.xtc_threshold) s.xtc_threshold = *p.xtc_threshold;
  if (p.mirostat) {
    if (*p.mirostat < 0 || *p.mirostat > 2) invalid_argument("mirostat " + std::to_string(*p.mirostat) + ": expected 0 (off), 1 or 2");
    s.mirostat = static_cast<int>(*p.mirostat);
  }
  if (p.mirostat_tau) s.mirostat_tau = *p.mirostat_tau;
  if (p.mirostat_eta) s.mirostat_eta = *p.mirostat_eta;
  if (p.dry_multiplier) s.dry_multiplier = *p.dry_multiplier;
  if (p.dry_base) s.dry_base = *p.dry_base;
  if (p.dry_allowed_length) s.dry_allowed_length = *p.dry_allowed_length;
  if (p.dry_penalty_last_n) s.dry_penalty_last_n = *p.dry_penalty_last_n;
  if (p.dry_sequence_breakers) s.dry_sequence_breakers = *p.dry_sequence_breakers;
  if (p.dynatemp_range) s.dynatemp_range = *p.dynatemp_range;
  if (p.dynatemp_exponent) s.dynatemp_exponent = *p.dynatemp_exponent;
  if (!p.samplers.empty()) s.samplers = sampler_order_from_names(p.samplers, "samplers");
}

}  // namespace

void check_generate_params(const GenerateParams& p) {
  SamplingOptions s;  // the fields given, over defaults that pass
  apply_given_sampling(p, s);
  s.logit_bias = p.logit_bias;
  validate_sampling_options(s);
  for (const std::string& b : s.dry_sequence_breakers) {
    if (b.empty()) invalid_argument("dry_sequence_breakers: an empty sequence breaker would break every sequence");
  }
  if (p.max_new_tokens && *p.max_new_tokens < 1 && *p.max_new_tokens != -1) {
    invalid_argument("max_new_tokens " + std::to_string(*p.max_new_tokens) + ": must be at least 1 (-1: until the cache is full)");
  }
  if (!p.json_schema.empty() && !p.grammar.empty()) invalid_argument("json_schema and grammar: give one constraint");
  if (!p.json_schema.empty()) JsonSchema::parse(p.json_schema, "json_schema");
}

GenerateOptions generate_options(const GenerateParams& p, const Checkpoint& ck, const staticlm::Tokenizer* tokenizer) {
  GenerateOptions g;
  g.sampling = sampling_defaults(ck.generation_config());
  apply_given_sampling(p, g.sampling);
  g.sampling.seed = p.seed;
  const std::int64_t vocab = ck.config().text.vocab_size;
  for (const auto& [token, bias] : p.logit_bias) {
    if (token < 0 || token >= vocab) {
      invalid_argument("logit_bias: token " + std::to_string(token) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
    }
    g.sampling.logit_bias.emplace_back(token, bias);
  }
  const auto& gen = ck.generation_config();
  g.max_new_tokens = p.max_new_tokens.value_or(gen && gen->max_new_tokens ? *gen->max_new_tokens : 256);
  if (p.max_new_tokens == -1) g.max_new_tokens = kNoTokenLimit;  // the CLI's -n -1
  if (g.max_new_tokens < 1) {
    invalid_argument((p.max_new_tokens ? std::string() : std::string("generation_config.json: ")) + "max_new_tokens " +
                     std::to_string(g.max_new_tokens) + ": must be at least 1" +
                     (p.max_new_tokens ? " (-1: until the cache is full)" : ""));
  }
  g.eos_token_ids = resolve_eos_ids(ck.config(), ck.generation_config());
  // As llama.cpp's --ignore-eos: the end tokens are never sampled.
  if (p.ignore_eos) {
    for (std::int64_t id : g.eos_token_ids) g.sampling.logit_bias.emplace_back(id, -INFINITY);
  }
  resolve_dry_breakers(g.sampling, tokenizer, "dry_sequence_breakers");
  validate_sampling_options(g.sampling);
  if (!p.json_schema.empty() && !p.grammar.empty()) invalid_argument("json_schema and grammar: give one constraint");
  if (!p.grammar.empty()) {
    if (!tokenizer) invalid_argument("grammar: constrained generation needs the checkpoint's tokenizer.json");
    auto grammar = std::make_shared<const Grammar>(parse_grammar(p.grammar, "grammar", tokenizer, ck.config().text.vocab_size));
    g.constraint = grammar_constraint_factory(std::move(grammar), *tokenizer, g.eos_token_ids);
  }
  if (!p.json_schema.empty()) {
    auto schema = std::make_shared<const JsonSchema>(JsonSchema::parse(p.json_schema, "json_schema"));
    if (!tokenizer) invalid_argument("json_schema: constrained generation needs the checkpoint's tokenizer.json");
    g.constraint = json_constraint_factory(std::move(schema), *tokenizer, g.eos_token_ids);
    if (p.thought_first) g.constraint = thought_first_factory(std::move(g.constraint), *tokenizer, g.eos_token_ids);
  }
  g.stop_strings = p.stop;
  g.record_logits = !p.dump_logits.empty();
  g.should_stop = p.should_stop;
  return g;
}

staticlm::GenerationResult stopped_in_prompt(const StoppedByCaller& stopped) {
  staticlm::GenerationResult r;
  r.reason = StopReason::kCallback;
  r.message = stopped.what();
  return r;
}

}  // namespace staticlm::api
