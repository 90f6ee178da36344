// A Hugging Face Gemma 4 checkpoint directory: its config, its generation config, and its
// weights (memory-mapped; views into the files, never copies), checked against the config.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/layer_table.h"
#include "tensor/safetensors.h"

namespace staticlm {

class Checkpoint {
 public:
  enum class Weights { kRequired, kOptional };

  // Reads DIR/config.json (and generation_config.json when present), builds the layer table,
  // and maps the weights (model.safetensors or a sharded index) and validates them against the
  // config. With Weights::kOptional a directory holding only config.json opens too.
  static std::unique_ptr<Checkpoint> open(const std::string& dir, Weights weights = Weights::kRequired);

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const std::optional<GenerationConfig>& generation_config() const { return generation_config_; }
  const std::vector<LayerInfo>& layers() const { return layers_; }
  bool has_weights() const { return store_ != nullptr; }
  // The weights; throws kInvalidArgument when the checkpoint was opened without them.
  const TensorStore& weights() const;

 private:
  std::string dir_;
  ModelConfig config_;
  std::optional<GenerationConfig> generation_config_;
  std::vector<LayerInfo> layers_;
  std::unique_ptr<TensorStore> store_;
};

}  // namespace staticlm
