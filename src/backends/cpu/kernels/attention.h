// Scaled dot-product attention with an additive mask and grouped-query heads, f32:
//   out = softmax(q k^T * scale + mask) v, query head h reading KV head h / (heads / kv_heads).
// Keys may come from several buffers (a decode graph's past cache plus the current token's
// row) without being copied together: they are read as consecutive segments.
//
// Mask entries at or below kNegligibleMask weigh less than exp(-60) ~ 1e-26 of an unmasked key,
// so the SIMD paths skip them: a decode row reads only the valid past slots (its cost follows
// the context, not max_seq), and prefill query blocks visit only the key range their rows'
// masks open (causal and sliding-window blocks skip what lies outside). The scalar reference
// visits every key.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/thread_pool.h"

namespace staticlm::cpu {

inline constexpr float kNegligibleMask = -60.0f;

// `rows` keys and values of every KV head: element (h, r, d) at h * head_stride + r * hd + d.
struct KvSegment {
  const float* k = nullptr;
  const float* v = nullptr;
  std::int64_t rows = 0;
  std::int64_t head_stride = 0;
};

struct AttentionShape {
  std::int64_t queries = 0;   // query rows
  std::int64_t heads = 0;     // query heads
  std::int64_t kv_heads = 0;  // divides heads
  std::int64_t head_dim = 0;
};

// q [queries, heads, hd]; mask row i at mask + i * mask_stride, one value per key in segment
// order; out [queries, heads, hd]. `scratch` is resized as needed (reused across calls). With
// a pool, (query, head) pairs are split across its threads.
void attention(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys, const float* mask,
               std::int64_t mask_stride, float scale, float* out, std::vector<float>& scratch,
               ThreadPool* pool = nullptr);

// The scalar reference: every key of every row, in order.
void attention_reference(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys,
                         const float* mask, std::int64_t mask_stride, float scale, float* out,
                         std::vector<float>& scratch, ThreadPool* pool = nullptr);

}  // namespace staticlm::cpu
