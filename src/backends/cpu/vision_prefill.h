// vision_prefill on the CPU: the vision tower over the profile's fixed patch count, with the
// profile's canonical patch positions fixed when the graph is prepared (as TICO exports it: the
// graph's only input is pixel_values). spec/static-runtime.md (d), spec/gemma4.md 4.2-4.3.
//
// Ownership: owns its weights' f32 copies and scratch; borrows the checkpoint tensors the
// WeightGetter returns and the thread pool passed to run(), which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/text_weights.h"
#include "backends/cpu/vision_tower.h"
#include "base/thread_pool.h"
#include "model/config.h"
#include "staticlm/backend.h"

namespace staticlm::cpu {

// The canonical positions [num_patches, 2] of a profile: (i % W, i / W) for i < H*W, then
// (-1, -1). Throws kInvalidArgument naming the profile field when the grid is empty, not
// divisible by the pooling kernel, does not fit in num_patches or the position table, or does
// not pool to num_visual_tokens; or when patch_vector_size is not 3 * patch_size^2.
std::vector<std::int64_t> canonical_patch_positions(const SubgraphProfile& profile, const VisionConfig& vision);

class VisionPrefill {
 public:
  // config.vision must be set; loads the vision weights (kInvalidFile naming a bad tensor).
  // bf16_activations: see CpuBackendOptions.
  static std::unique_ptr<VisionPrefill> create(const ModelConfig& config, const WeightGetter& weights,
                                               const SubgraphProfile& profile, bool bf16_activations = true);

  // pixels [num_patches, 3 p^2] -> out [num_visual_tokens, D].
  void run(const float* pixels, float* out, ThreadPool* pool);

  const std::vector<std::int64_t>& positions() const { return positions_; }
  // Shown every encoder layer's output of later runs (CpuBackendOptions::vision_layer_tap).
  void set_layer_tap(VisionLayerTap tap) { tap_ = std::move(tap); }

 private:
  VisionPrefill() = default;
  VisionConfig config_;
  CpuVisionWeights weights_;
  std::vector<std::int64_t> positions_;  // [num_patches, 2]
  std::int64_t num_patches_ = 0, num_visual_tokens_ = 0;
  VisionScratch scratch_;
  VisionLayerTap tap_;
};

}  // namespace staticlm::cpu
