// DRY's sequence breakers as token ids (runtime/sampler.h): the tokens whose text holds one of
// the breaker strings, so a repeat never runs through a newline, a ':', a quote or a '*' (the
// defaults), however the tokenizer splits the text around it.
#pragma once

#include "runtime/sampler.h"
#include "text/tokenizer.h"

namespace staticlm {

// Fills s.dry_breaker_ids from s.dry_sequence_breakers when DRY is on (dry_multiplier > 0),
// clears them otherwise. Without a tokenizer there are no token texts: the default breakers are
// left out; breakers given otherwise are kInvalidArgument naming `what`. An empty breaker
// string is kInvalidArgument too (every token would hold it).
void resolve_dry_breakers(SamplingOptions& s, const Tokenizer* tokenizer, const std::string& what);

}  // namespace staticlm
