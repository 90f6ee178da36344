// Hand-built in-memory models for the CPU backend tests: a config, its layer table and named
// weight tensors, without files or the config parser.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/cpu/text_weights.h"
#include "base/error.h"
#include "model/config.h"
#include "model/layer_table.h"
#include "tensor/tensor.h"

namespace staticlm::test {

struct MiniModel {
  ModelConfig config;
  std::vector<LayerInfo> layers;
  std::map<std::string, Tensor> tensors;

  void set(const std::string& name, Shape shape, const std::vector<float>& values, DType dtype = DType::kF32) {
    tensors[name] = Tensor::from_f32(dtype, std::move(shape), values);
  }
  cpu::WeightGetter getter() const {
    return [this](const std::string& name) {
      const auto it = tensors.find(name);
      if (it == tensors.end()) invalid_file("no tensor " + name);
      return it->second.view();
    };
  }
};

inline std::vector<float> identity(std::int64_t rows, std::int64_t cols) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols), 0.0f);
  for (std::int64_t i = 0; i < std::min(rows, cols); ++i) v[static_cast<std::size_t>(i * cols + i)] = 1.0f;
  return v;
}

}  // namespace staticlm::test
