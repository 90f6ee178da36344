#include "runtime/dry_breakers.h"

#include <algorithm>

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

void DryBreakerCache::resolve(SamplingOptions& s, const std::string& what) {
  if (s.dry_multiplier > 0) {
    std::lock_guard lock(mu_);
    for (auto it = recent_.begin(); it != recent_.end(); ++it) {
      if (it->first != s.dry_sequence_breakers) continue;
      s.dry_breaker_ids = it->second;
      std::rotate(it, it + 1, recent_.end());  // now the newest
      return;
    }
  }
  // Resolved outside the lock (the scan is the slow part); a refused list is not remembered.
  resolve_dry_breakers(s, tokenizer_, what);
  if (s.dry_multiplier <= 0) return;
  std::lock_guard lock(mu_);
  if (recent_.size() == kKept) recent_.erase(recent_.begin());
  recent_.emplace_back(s.dry_sequence_breakers, s.dry_breaker_ids);
}

}  // namespace staticlm
