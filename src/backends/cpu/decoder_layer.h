// One Gemma 4 decoder layer on the CPU (spec/gemma4.md 2.3-2.4), shared by the prefill, the
// decode and the append-prefill subgraphs: they differ only in where keys come from and how
// many query rows run.
#pragma once

#include <cstdint>

#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/text_weights.h"
#include "backends/cpu/workspace.h"
#include "base/thread_pool.h"
#include "staticlm/backend.h"

namespace staticlm::cpu {

// Buffers of one call, laid out as the subgraph signature says (S = max_seq, n = S prefill,
// 1 decode, Q append). Borrowed for the call.
struct DecoderLayerCall {
  bool decode = false;
  std::int64_t append = 0;  // Q for an append-prefill call (decode false), else 0
  std::int64_t max_seq = 0;
  const float* hidden = nullptr;  // [n, D]
  const float* mask = nullptr;    // prefill [S, S]; decode [S]; append [Q, S]
  const float* cos = nullptr;     // [n, hd]
  const float* sin = nullptr;
  const float* per_layer_input = nullptr;  // [n, P], or null when P = 0
  // Prefill consumer: shared [Hkv, S, hd]. Decode owner: past [Hkv, S-1, hd]. Append owner:
  // past [Hkv, S-Q, hd]. Decode and append consumers: shared [Hkv, S, hd]. Prefill owner: unused.
  const float* kv_k = nullptr;
  const float* kv_v = nullptr;
  float* hidden_out = nullptr;  // [n, D]
  float* new_k = nullptr;       // owners: [Hkv, n, hd]
  float* new_v = nullptr;
};

struct DecoderLayerOptions {
  RopeSine rope_sine = RopeSine::kPreNegatedSin;
  float rms_norm_eps = 1e-6f;
  // Prefill and append: run only the leading rows the mask leaves valid (see
  // active_query_rows); outputs of the skipped rows are zero.
  bool skip_padded_rows = true;
  ThreadPool* pool = nullptr;  // borrowed; null runs on the calling thread
};

// Number of leading query rows of a prefill mask [S, S] that a valid output can depend on: the
// trailing rows whose own key is masked (padding) are dropped, but only if no kept row gives a
// dropped key more weight than a masked entry (<= kNegligibleMask, exp(-60) ~ 1e-26 relative).
// Otherwise S: the full computation.
std::int64_t active_prefill_rows(const float* mask, std::int64_t s);
// The same for `rows` query rows of a mask with row stride `stride` whose row i's own key is
// column first_own_key + i (prefill: rows = stride = S, 0; append: Q, S, S - Q).
std::int64_t active_query_rows(const float* mask, std::int64_t rows, std::int64_t stride, std::int64_t first_own_key);

void run_decoder_layer(const LayerInfo& layer, const CpuLayerWeights& w, std::int64_t hidden_size,
                       std::int64_t ple_width, const DecoderLayerOptions& options, const DecoderLayerCall& call,
                       Workspace& ws);

}  // namespace staticlm::cpu
