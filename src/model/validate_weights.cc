// validate_weights on a TensorStore: kept apart from weights.cc because it is the only piece
// of the model area that needs the safetensors reader linked in.
#include "model/weights.h"

namespace staticlm {

void validate_weights(const ModelConfig& config, const TensorStore& store) {
  check_weights(
      config,
      [&store](const std::string& name) -> std::optional<TensorInfo> {
        if (!store.contains(name)) return std::nullopt;
        const TensorView view = store.get(name);
        return TensorInfo{view.dtype, view.shape};
      },
      store.source());
}

}  // namespace staticlm
