// The Gemma 4 vision tower on the CPU (spec/gemma4.md 4.2-4.3): patch embedder, encoder layers,
// position pooling and the projection into the language model, for any number of patches.
// vision_prefill runs it on the profile's fixed patch count; tests also run it on the valid
// patches alone (the property spec 4.2 states).
//
// Ownership: the caller owns every buffer; VisionScratch is reused across calls.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backends/cpu/vision_weights.h"
#include "base/thread_pool.h"
#include "model/config.h"

namespace staticlm::cpu {

struct VisionScratch {
  std::vector<float> x, normed, clipped, q, k, v, kh, vh, attn, proj, gate, up, cos, sin, key_mask, pooled, scores,
      pool_sums;
};

// y [n, w.rows] = clamp(clamp(x, in_min, in_max) . W^T, out_min, out_max); x [n, w.cols].
// `clipped` is scratch for the clamped input.
void clipped_linear(const ClippedLinear& w, const float* x, std::int64_t n, float* y, std::vector<float>& clipped,
                    ThreadPool* pool);

// pixels [n, 3 p^2] in [0, 1], positions [n, 2] = (x, y), (-1, -1) for a padding patch ->
// out [tokens, D] (out holds max_tokens rows; D = text hidden size). Returns tokens, the
// number of non-empty pooled cells, in row-major cell order. Throws kInvalidArgument when a
// position is out of the position table, no patch is valid, or the cells exceed max_tokens.
// tap (optional): shown each encoder layer's output x [n, Dv], padding rows included (the
// inspector's per-layer localisation); it only reads.
using VisionLayerTap = std::function<void(int layer, const float* x, std::int64_t n, std::int64_t dv)>;
std::int64_t run_vision_tower(const CpuVisionWeights& w, const VisionConfig& config, const float* pixels,
                              const std::int64_t* positions, std::int64_t n, float* out, std::int64_t max_tokens,
                              VisionScratch& s, ThreadPool* pool, const VisionLayerTap* tap = nullptr);

}  // namespace staticlm::cpu
