// What the prefill and the decode steps of one Runtime share: the backend, the model's layer
// table, the host tables that depend only on the model (RoPE frequencies per layer), and the
// session state (the KV cache and how many of its slots are filled).
//
// Ownership: the Runtime owns this; `backend` is borrowed and must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "base/thread_pool.h"
#include "model/config.h"
#include "model/layer_table.h"
#include "runtime/kv_cache.h"
#include "staticlm/backend.h"

namespace staticlm {

struct RuntimeState {
  RuntimeState(Backend& b, ModelConfig c, std::vector<LayerInfo> l, float fill, ThreadPool* host_pool);

  Backend& backend;
  const ModelConfig config;
  const std::vector<LayerInfo> layers;
  const std::int64_t max_seq;
  const float mask_fill;
  ThreadPool* const pool;  // host threads (RuntimeOptions::pool), may be null
  std::vector<std::vector<float>> inv_freq;  // [layer][head_dim / 2]

  KvCache cache;
  std::int64_t past_len = 0;  // filled cache slots; the next token's position
  bool prefilled = false;
  // Set for one generate call (GenerateOptions::should_stop), else empty: polled before each
  // layer of a prefill or append (stop_point), so a long prompt can be given up part-way.
  std::function<bool()> should_stop;
};

// Thrown by stop_point. What the prompt filled so far is left as after any throw: a prefill's
// cache counts as empty, an append's rows past past_len are masked (a Conversation rewinds).
struct StoppedByCaller : std::runtime_error {
  StoppedByCaller() : std::runtime_error("stopped by the caller during the prompt (nothing generated)") {}
};

inline void stop_point(const RuntimeState& st) {
  if (st.should_stop && st.should_stop()) throw StoppedByCaller();
}

}  // namespace staticlm
