// The CPU subgraphs around the decoder stack: token_embedding, ple_embedding, ple_projection,
// multimodal_fusion_prefill and lm_head (spec/gemma4.md 2.2 and 2.5). Buffers are borrowed.
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/text_weights.h"
#include "backends/cpu/workspace.h"
#include "base/thread_pool.h"

namespace staticlm::cpu {

// out [n, D] = embed_tokens[ids] * sqrt(D) (f32).
void run_token_embedding(const CpuTextWeights& w, std::span<const std::int64_t> ids, float* out);

// out [n, L, P] = embed_tokens_per_layer[ids] * sqrt(P).
void run_ple_embedding(const CpuTextWeights& w, std::int64_t ple_width, std::span<const std::int64_t> ids,
                       float* out);

// out [n, L, P] = (RMSNorm_P(embeds . W^T * D^-0.5) + token_inputs) * 2^-0.5, the norm weight
// shared by all L slots. embeds [n, D], token_inputs [n, L, P].
void run_ple_projection(const CpuTextWeights& w, std::int64_t ple_width, float eps, std::int64_t n,
                        const float* embeds, const float* token_inputs, float* out, Workspace& ws, ThreadPool* pool);

// out [S, D] = text with rows [start, start + count) replaced by visual [count, D].
void run_multimodal_fusion(std::int64_t s, std::int64_t d, std::int64_t start, std::int64_t count,
                           const float* text, const float* visual, float* out);

// logits [V] = RMSNorm(hidden [D]; norm) . embed_tokens^T (tied head, no soft-capping).
void run_lm_head(const CpuTextWeights& w, float eps, const float* hidden, float* logits, Workspace& ws,
                 ThreadPool* pool);

}  // namespace staticlm::cpu
