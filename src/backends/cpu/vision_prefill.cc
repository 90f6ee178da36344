#include "backends/cpu/vision_prefill.h"

#include <string>

#include "base/error.h"

namespace staticlm::cpu {

std::vector<std::int64_t> canonical_patch_positions(const SubgraphProfile& p, const VisionConfig& v) {
  const std::int64_t h = p.patch_grid_height, w = p.patch_grid_width, k = v.pooling_kernel_size;
  auto fail = [&](const std::string& what) {
    invalid_argument("subgraph profile: patch grid " + std::to_string(h) + "x" + std::to_string(w) +
                     " (patch_grid_height x patch_grid_width) " + what);
  };
  if (h <= 0 || w <= 0) fail("must be positive for a profile with an image span");
  if (k <= 0 || h % k != 0 || w % k != 0) fail("must be divisible by pooling_kernel_size " + std::to_string(k));
  if (h * w > p.num_patches) fail("holds more patches than num_patches " + std::to_string(p.num_patches));
  if (h > v.position_embedding_size || w > v.position_embedding_size) {
    fail("exceeds position_embedding_size " + std::to_string(v.position_embedding_size));
  }
  if ((h / k) * (w / k) != p.num_visual_tokens) {
    fail("pools to " + std::to_string((h / k) * (w / k)) + " tokens, expected num_visual_tokens " +
         std::to_string(p.num_visual_tokens));
  }
  if (p.patch_vector_size != 3 * v.patch_size * v.patch_size) {
    invalid_argument("subgraph profile: patch_vector_size " + std::to_string(p.patch_vector_size) +
                     ", expected 3 * patch_size^2 = " + std::to_string(3 * v.patch_size * v.patch_size));
  }
  std::vector<std::int64_t> pos(static_cast<std::size_t>(2 * p.num_patches), -1);
  for (std::int64_t i = 0; i < h * w; ++i) {
    pos[static_cast<std::size_t>(2 * i)] = i % w;
    pos[static_cast<std::size_t>(2 * i + 1)] = i / w;
  }
  return pos;
}

std::unique_ptr<VisionPrefill> VisionPrefill::create(const ModelConfig& config, const WeightGetter& weights,
                                                     const SubgraphProfile& profile, bool bf16_activations) {
  if (!config.vision) internal_error("vision_prefill: the model has no vision config");
  std::unique_ptr<VisionPrefill> g(new VisionPrefill());
  g->config_ = *config.vision;
  g->positions_ = canonical_patch_positions(profile, *config.vision);
  g->num_patches_ = profile.num_patches;
  g->num_visual_tokens_ = profile.num_visual_tokens;
  g->weights_ = load_vision_weights(config, weights);
  set_bf16_activations(g->weights_, bf16_activations);
  return g;
}

void VisionPrefill::run(const float* pixels, float* out, ThreadPool* pool) {
  // The full fixed-shape computation: padding rows run too (their keys are masked, their
  // outputs dropped), so this is what an exported graph computes.
  const std::int64_t tokens = run_vision_tower(weights_, config_, pixels, positions_.data(), num_patches_, out,
                                               num_visual_tokens_, scratch_, pool, &tap_);
  if (tokens != num_visual_tokens_) {
    internal_error("vision_prefill: pooled " + std::to_string(tokens) + " tokens, expected " +
                   std::to_string(num_visual_tokens_));
  }
}

}  // namespace staticlm::cpu
