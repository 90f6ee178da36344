// Final logit soft-capping, done on the host after lm_head (spec/gemma4.md 2.5):
// logits = tanh(logits / cap) * cap, in f32, as upstream orders the operations (tanh vectorized,
// within a few ulp of std::tanh).
#pragma once

#include <optional>
#include <span>

#include "base/thread_pool.h"

namespace staticlm {

// No-op when cap is unset (a config without final_logit_softcapping). With a pool, its threads
// take parts of the logits (the same values: each logit is capped alone).
void apply_final_softcap(std::span<float> logits, std::optional<double> cap, ThreadPool* pool = nullptr);

}  // namespace staticlm
