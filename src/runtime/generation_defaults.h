// Where the settings of a generation come from when the caller does not give them: the
// checkpoint's generation_config.json (sampling, EOS ids), else config.json (EOS ids) and
// Hugging Face's defaults (greedy). Also parses a prompt given as token ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "runtime/sampler.h"

namespace staticlm {

// generation_config.json's eos_token_id list when present and non-empty, else config.json's.
std::vector<std::int64_t> resolve_eos_ids(const ModelConfig& config, const std::optional<GenerationConfig>& gen);

// do_sample false (or no generation_config.json): greedy. Otherwise its temperature, top_k,
// top_p, min_p, typical_p and repetition_penalty, each when set.
SamplingOptions sampling_defaults(const std::optional<GenerationConfig>& gen);

// "2,105,2364" -> ids. Each must be an integer in [0, vocab_size); `what` (e.g. "--prompt-ids")
// names the source in the kInvalidArgument message, with the offending item.
std::vector<std::int64_t> parse_token_ids(const std::string& text, std::int64_t vocab_size, const std::string& what);

}  // namespace staticlm
