// The tensors a checkpoint must hold for a config, with their shapes (spec/gemma4.md 2.6, 4),
// the check that a TensorStore holds them, and the parameter count. Everything returned is a
// plain value owned by the caller; the store is only borrowed for the call.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "tensor/dtype.h"
#include "tensor/safetensors.h"
#include "tensor/shape.h"

namespace staticlm {

struct WeightSpec {
  std::string name;  // full safetensors name, e.g. "model.language_model.layers.0.self_attn.q_proj.weight"
  Shape shape;
  bool operator==(const WeightSpec&) const = default;
};

// Every tensor the runtime reads, in a fixed order: text model (globals, then layer by layer),
// then vision tower and embed_vision (multimodal layout with a vision_config only). lm_head is
// tied and not listed. Optional tensors that checkpoints may carry (k/v projections and norms
// of shared layers, the audio tower, vision_tower.pooler.scale) are not listed. Nothing is
// listed for the PLE when hidden_size_per_layer_input is 0.
// The config must have come through parse_model_config (or build_layer_table must accept it).
std::vector<WeightSpec> expected_weights(const ModelConfig& config);

// dtype and shape of one tensor of a store.
struct TensorInfo {
  DType dtype = DType::kF32;
  Shape shape;
};
// Looks a tensor up by name; nullopt when the store does not hold it.
using TensorLookup = std::function<std::optional<TensorInfo>(const std::string& name)>;

// The check behind validate_weights, on any store: throws kInvalidFile starting with `source`
// and listing, in expected_weights order, every missing tensor (with the expected shape),
// every shape mismatch and every non-float dtype, by name, on one line.
void check_weights(const ModelConfig& config, const TensorLookup& lookup, const std::string& source);

// Throws kInvalidFile listing every missing tensor and every shape mismatch by name (and the
// store's source) when the store does not match the config; floats of any dtype are accepted.
void validate_weights(const ModelConfig& config, const TensorStore& store);

// Elements of every tensor expected_weights lists (buffers such as layer_scalar and the
// vision clip bounds included). Throws kOutOfRange when the count does not fit in 63 bits.
struct ParameterCount {
  std::int64_t text = 0;    // including both embedding tables
  std::int64_t vision = 0;  // vision tower + embed_vision
  std::int64_t total() const { return text + vision; }
};
ParameterCount count_parameters(const ModelConfig& config);

}  // namespace staticlm
