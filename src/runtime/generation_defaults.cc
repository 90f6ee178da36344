#include "runtime/generation_defaults.h"

#include <charconv>

#include "base/error.h"

namespace staticlm {

std::vector<std::int64_t> resolve_eos_ids(const ModelConfig& config, const std::optional<GenerationConfig>& gen) {
  if (gen && !gen->eos_token_id.empty()) return gen->eos_token_id;
  return config.eos_token_id;
}

SamplingOptions sampling_defaults(const std::optional<GenerationConfig>& gen) {
  SamplingOptions o;
  if (!gen || !gen->do_sample) {
    o.temperature = 0.0;
  } else {
    if (gen->temperature) o.temperature = *gen->temperature;
    if (gen->top_k) o.top_k = *gen->top_k;
    if (gen->top_p) o.top_p = *gen->top_p;
    if (gen->min_p) o.min_p = *gen->min_p;
    if (gen->typical_p) o.typical_p = *gen->typical_p;
  }
  if (gen && gen->repetition_penalty) o.repetition_penalty = *gen->repetition_penalty;
  return o;
}

std::vector<std::int64_t> parse_token_ids(const std::string& text, std::int64_t vocab_size, const std::string& what) {
  std::vector<std::int64_t> ids;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    std::string item = text.substr(pos, comma - pos);
    const auto first = item.find_first_not_of(" \t"), last = item.find_last_not_of(" \t");
    item = first == std::string::npos ? std::string() : item.substr(first, last - first + 1);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      invalid_argument(what + ": \"" + item + "\" (item " + std::to_string(ids.size() + 1) +
                       ") is not a token id; expected comma-separated integers such as 2,105,2364");
    }
    if (v < 0 || v >= vocab_size) {
      invalid_argument(what + ": token id " + std::to_string(v) + " (item " + std::to_string(ids.size() + 1) +
                       ") is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
    ids.push_back(v);
    pos = comma + 1;
  }
  return ids;
}

}  // namespace staticlm
