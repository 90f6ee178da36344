// The sampling and length flags `chat` (and `serve`, as defaults) share with `run`, with
// llama.cpp's names: -n, --temp, --top-k, --top-p, --min-p, --repetition-penalty, --seed, --stop.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "runtime/generation.h"
#include "staticlm/session.h"

namespace staticlm::cli {

struct SamplingFlags {
  std::optional<std::int64_t> max_new_tokens, top_k, repeat_last_n, mirostat;
  std::optional<double> mirostat_tau, mirostat_eta;
  std::optional<double> dry_multiplier, dry_base;
  std::optional<std::int64_t> dry_allowed_length, dry_penalty_last_n;
  std::vector<std::string> dry_sequence_breakers;  // "none": no breakers
  std::optional<double> temperature, top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<double> top_n_sigma, typical_p, xtc_probability, xtc_threshold;
  std::optional<double> dynatemp_range, dynatemp_exponent;
  std::optional<std::string> samplers, sampling_seq;  // llama.cpp's "top_k;top_p;..." and "kpt"
  std::int64_t seed = 0;  // -1: a random seed
  std::vector<std::string> stops;
  std::vector<std::string> logit_bias;  // llama.cpp's TOKEN_ID(+|-)BIAS
  bool ignore_eos = false;
  std::string json_schema, json_schema_file;
  std::string grammar, grammar_file;
  // llama.cpp's -e (its default) / --no-escape: \n, \t, ... in command-line text (-p, --system,
  // --stop, --dry-sequence-breaker) become the characters; files are read as they are.
  bool escape = true;
};

void add_sampling_flags(CLI::App& cmd, SamplingFlags& f);

// The flags as the library's generation parameters (unset flags: the checkpoint's defaults);
// -n below 1 is kInvalidArgument naming the flag.
api::GenerateParams generate_params(const SamplingFlags& f);

// The checkpoint's defaults (generation_config.json, EOS ids) with the flags applied; bad values
// are kInvalidArgument naming the flag.
GenerateOptions generate_options(const SamplingFlags& f, const Checkpoint& ck);

}  // namespace staticlm::cli
