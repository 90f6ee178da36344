#include "sampling_flags.h"

#include "base/error.h"
#include "runtime/generation_defaults.h"

namespace staticlm::cli {

void add_sampling_flags(CLI::App& cmd, SamplingFlags& f) {
  cmd.add_option("-n,--max-new-tokens", f.max_new_tokens,
                 "tokens to generate at most per reply (default: generation_config.json's max_new_tokens, else 256)");
  cmd.add_option("--temp,--temperature", f.temperature, "sampling temperature; 0 is greedy");
  cmd.add_option("--top-k", f.top_k, "keep the k most likely tokens (0: off)");
  cmd.add_option("--top-p", f.top_p, "nucleus sampling mass (1: off)");
  cmd.add_option("--min-p", f.min_p, "drop tokens below min_p times the best one (0: off)");
  cmd.add_option("--repetition-penalty", f.repetition_penalty, "penalty for tokens already seen (1: off)");
  cmd.add_option("--seed", f.seed, "random seed for sampling (default 0)");
  cmd.add_option("--stop", f.stops, "stop a reply when its text contains this string (repeatable)");
}

GenerateOptions generate_options(const SamplingFlags& f, const Checkpoint& ck) {
  GenerateOptions g;
  g.sampling = sampling_defaults(ck.generation_config());
  if (f.temperature) g.sampling.temperature = *f.temperature;
  if (f.top_k) g.sampling.top_k = *f.top_k;
  if (f.top_p) g.sampling.top_p = *f.top_p;
  if (f.min_p) g.sampling.min_p = *f.min_p;
  if (f.repetition_penalty) g.sampling.repetition_penalty = *f.repetition_penalty;
  g.sampling.seed = f.seed;
  validate_sampling_options(g.sampling);
  const auto& gen = ck.generation_config();
  g.max_new_tokens = f.max_new_tokens.value_or(gen && gen->max_new_tokens ? *gen->max_new_tokens : 256);
  if (g.max_new_tokens < 1) invalid_argument("-n " + std::to_string(g.max_new_tokens) + ": must be at least 1");
  g.eos_token_ids = resolve_eos_ids(ck.config(), ck.generation_config());
  g.stop_strings = f.stops;
  return g;
}

}  // namespace staticlm::cli
