// The tensors a checkpoint must hold for a config, with their shapes (spec/gemma4.md 2.6, 4),
// the check that a TensorStore holds them, and the parameter count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "tensor/safetensors.h"
#include "tensor/shape.h"

namespace staticlm {

struct WeightSpec {
  std::string name;  // full safetensors name, e.g. "model.language_model.layers.0.self_attn.q_proj.weight"
  Shape shape;
};

// Every tensor the runtime reads, in a fixed order: text model, then vision tower and
// embed_vision (multimodal layout only). lm_head is tied and not listed. Optional tensors that
// checkpoints may carry (k/v projections of shared layers, audio tower) are not listed.
std::vector<WeightSpec> expected_weights(const ModelConfig& config);

// Throws kInvalidFile listing every missing tensor and every shape mismatch by name (and the
// store's source) when the store does not match the config; floats of any dtype are accepted.
void validate_weights(const ModelConfig& config, const TensorStore& store);

// Parameters counted from the config (what expected_weights lists).
struct ParameterCount {
  std::int64_t text = 0;    // including both embedding tables
  std::int64_t vision = 0;  // vision tower + embed_vision
  std::int64_t total() const { return text + vision; }
};
ParameterCount count_parameters(const ModelConfig& config);

}  // namespace staticlm
