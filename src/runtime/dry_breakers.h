// DRY's sequence breakers as token ids (runtime/sampler.h): the tokens whose text holds one of
// the breaker strings, so a repeat never runs through a newline, a ':', a quote or a '*' (the
// defaults), however the tokenizer splits the text around it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace staticlm {

// Fills s.dry_breaker_ids from s.dry_sequence_breakers when DRY is on (dry_multiplier > 0),
// clears them otherwise. Without a tokenizer there are no token texts: the default breakers are
// left out; breakers given otherwise are kInvalidArgument naming `what`. An empty breaker
// string is kInvalidArgument too (every token would hold it).
void resolve_dry_breakers(SamplingOptions& s, const Tokenizer* tokenizer, const std::string& what);

// resolve_dry_breakers with the ids of the last few breaker lists remembered: a server resolves
// the same lists request after request, each a scan of the whole vocabulary (~2.5 ms for Gemma 4's
// 262,144 tokens). Thread-safe; borrows the tokenizer.
class DryBreakerCache {
 public:
  explicit DryBreakerCache(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}
  void resolve(SamplingOptions& s, const std::string& what);

 private:
  static constexpr std::size_t kKept = 8;
  const Tokenizer* tokenizer_;
  std::mutex mu_;
  std::vector<std::pair<std::vector<std::string>, std::vector<std::int64_t>>> recent_;  // the newest last
};

}  // namespace staticlm
