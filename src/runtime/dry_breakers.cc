#include "runtime/dry_breakers.h"

#include "base/error.h"

namespace staticlm {

void resolve_dry_breakers(SamplingOptions& s, const Tokenizer* tokenizer, const std::string& what) {
  s.dry_breaker_ids.clear();
  if (s.dry_multiplier <= 0) return;
  for (const std::string& b : s.dry_sequence_breakers) {
    if (b.empty()) invalid_argument(what + ": an empty sequence breaker would break every sequence");
  }
  if (tokenizer == nullptr) {
    if (s.dry_sequence_breakers == SamplingOptions{}.dry_sequence_breakers) return;
    invalid_argument(what + ": sequence breakers need the checkpoint's tokenizer.json (token texts)");
  }
  const std::vector<std::string>& bytes = tokenizer->token_index().bytes;
  for (std::size_t id = 0; id < bytes.size(); ++id) {
    // A special token's text is its content (Gemma 4's string quote <|"|> holds '"'), as
    // llama.cpp reads tokens for DRY with their special text.
    std::string_view text = bytes[id];
    if (text.empty()) text = tokenizer->id_to_token(static_cast<int>(id)).value_or(std::string_view());
    for (const std::string& b : s.dry_sequence_breakers) {
      if (text.find(b) != std::string_view::npos) {
        s.dry_breaker_ids.push_back(static_cast<std::int64_t>(id));
        break;
      }
    }
  }
}

}  // namespace staticlm
