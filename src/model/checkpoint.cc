#include "model/checkpoint.h"

#include <filesystem>

#include "base/error.h"
#include "base/file.h"
#include "model/weight_stats.h"
#include "model/weights.h"

namespace staticlm {

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& dir, Weights weights) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) invalid_argument(dir + ": not a checkpoint directory (does not exist or is not a directory)");
  auto c = std::unique_ptr<Checkpoint>(new Checkpoint());
  c->dir_ = dir;
  c->config_ = load_model_config(dir);
  c->generation_config_ = load_generation_config(dir);
  c->layers_ = build_layer_table(c->config_.text);
  const bool has_files = file_exists(path_join(dir, "model.safetensors")) ||
                         file_exists(path_join(dir, "model.safetensors.index.json"));
  if (has_files || weights == Weights::kRequired) {
    if (!has_files) invalid_argument(dir + ": no model.safetensors or model.safetensors.index.json");
    c->store_ = TensorStore::open_dir(dir);
    validate_weights(c->config_, *c->store_);
  }
  quantization_scheme(*c);  // refuses an unknown scheme or another tool's quantization by name
  return c;
}

const TensorStore& Checkpoint::weights() const {
  if (!store_) invalid_argument(dir_ + ": checkpoint has no weights");
  return *store_;
}

}  // namespace staticlm
