// In-memory random-weight models for the runtime tests: a preset config (optionally changed),
// its layer table, and every tensor expected_weights() lists, drawn from a fixed seed. No files.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "base/error.h"
#include "model/layer_table.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "runtime/runtime.h"

namespace staticlm::test {

class RandomModel {
 public:
  // `edit` may change the config before the table and weights are made.
  template <typename Edit>
  RandomModel(std::uint64_t seed, Edit edit) {
    config = preset_config("tiny", true);
    config.text.vocab_size = 1000;  // a small vocabulary keeps the tests fast
    config.text.vocab_size_per_layer_input = 1000;
    edit(config);
    layers = build_layer_table(config.text);
    std::uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
    auto uniform = [&state] {  // [-1, 1)
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<float>((state >> 40) * (1.0 / 8388608.0) - 1.0);
    };
    for (const WeightSpec& w : expected_weights(config)) {
      std::vector<float> v(static_cast<std::size_t>(w.shape.numel()));
      const bool vector = w.shape.rank() <= 1;
      // Norm weights and layer scalars near 1; matrices with unit-variance outputs.
      const float spread = vector ? 0.2f : static_cast<float>(std::sqrt(3.0 / static_cast<double>(w.shape[1])));
      for (float& x : v) x = (vector ? 1.0f : 0.0f) + spread * uniform();
      tensors[w.name] = Tensor::from_f32(DType::kBF16, w.shape, v);
    }
  }
  explicit RandomModel(std::uint64_t seed) : RandomModel(seed, [](ModelConfig&) {}) {}

  cpu::WeightGetter getter() const {
    return [this](const std::string& name) {
      const auto it = tensors.find(name);
      if (it == tensors.end()) invalid_file("no tensor " + name);
      return it->second.view();
    };
  }

  // bf16_activations defaults to false here: the runtime tests compare prefill rows with decode
  // rows (GEMV, f32 activations) at f32 tolerances; the bf16 policy has its own bounded test.
  std::unique_ptr<CpuBackend> backend(std::int64_t max_seq, RopeSine sine = RopeSine::kPreNegatedSin,
                                      bool skip_padded_rows = true, ThreadPool* pool = nullptr,
                                      bool bf16_activations = false) const {
    SubgraphProfile p;
    p.max_seq = max_seq;
    p.rope_sine = sine;
    CpuBackendOptions o;
    o.skip_padded_rows = skip_padded_rows;
    o.bf16_activations = bf16_activations;
    o.pool = pool;
    return CpuBackend::create(config, layers, getter(), p, o);
  }

  ModelConfig config;
  std::vector<LayerInfo> layers;
  std::map<std::string, Tensor> tensors;
};

inline std::vector<std::int64_t> random_prompt(std::size_t n, std::int64_t vocab, std::uint64_t seed) {
  std::vector<std::int64_t> ids;
  std::uint64_t s = seed;
  ids.push_back(2);  // <bos>
  while (ids.size() < n) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    ids.push_back(3 + static_cast<std::int64_t>((s >> 33) % static_cast<std::uint64_t>(vocab - 3)));
  }
  return ids;
}

inline float max_abs_diff(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace staticlm::test
