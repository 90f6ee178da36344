#include "model/weight_stats.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "base/file.h"
#include "model/checkpoint.h"
#include "quant/formats.h"
#include "tensor/safetensors.h"

namespace staticlm {

std::uint64_t decode_weight_bytes(const Checkpoint& ck) {
  const std::string prefix = ck.config().text_prefix();
  const std::string per_layer = prefix + "embed_tokens_per_layer.weight";
  const TensorStore& store = ck.weights();
  std::uint64_t bytes = 0;
  // Companions share their matrix's name as a prefix, so walking every text tensor counts them.
  for (const std::string& name : store.names()) {
    if (name.rfind(prefix, 0) != 0) continue;
    const TensorView v = store.get(name);
    const bool one_row = name == per_layer || name == per_layer + "_scale" || name == per_layer + "_zero_point";
    if (one_row && v.shape.rank() > 0) {
      bytes += v.nbytes() / static_cast<std::uint64_t>(std::max<std::int64_t>(1, v.shape[0]));
    } else {
      bytes += v.nbytes();
    }
  }
  return bytes;
}

std::map<std::string, int> weight_dtype_counts(const TensorStore& store) {
  std::map<std::string, int> counts;
  for (const std::string& name : store.names()) ++counts[dtype_name(store.get(name).dtype)];
  return counts;
}

MatrixAlignment matrix_alignment(const TensorStore& store) {
  MatrixAlignment a;
  for (const std::string& name : store.names()) {
    const TensorView v = store.get(name);
    if (v.shape.rank() != 2 || v.nbytes() == 0 || v.nbytes() % kSafetensorsAlignment != 0) continue;
    ++a.matrices;
    a.on_cache_lines += reinterpret_cast<std::uintptr_t>(v.data) % kSafetensorsAlignment == 0;
  }
  return a;
}

std::string quantization_scheme(const Checkpoint& ck) {
  const std::optional<std::string>& from_config = ck.config().quantization_scheme;  // checked when parsed
  std::optional<std::string> from_weights;
  if (ck.has_weights()) from_weights = ck.weights().metadata("staticlm_quantization");
  if (from_weights && !quant::known_scheme(*from_weights)) {
    invalid_file(ck.dir() + ": the weights' metadata staticlm_quantization: unknown scheme \"" + *from_weights +
                 "\" (expected q8, q4 or npu-w4)");
  }
  if (from_config && from_weights && *from_config != *from_weights) {
    invalid_file(path_join(ck.dir(), "config.json") + ": quantization_config.scheme \"" + *from_config +
                 "\" but the weights' metadata staticlm_quantization says \"" + *from_weights + "\"");
  }
  if (from_config) return *from_config;
  return from_weights.value_or("none");
}

}  // namespace staticlm
