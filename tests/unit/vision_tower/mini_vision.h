// A small random vision tower in memory (config + named tensors) for the vision tests: 2
// encoder layers of width 16, 2 heads of 8, patches of 2x2 pixels (12 values), pooling k = 3,
// a 4-wide text hidden size.
#pragma once

#include <map>
#include <random>
#include <string>

#include "backends/cpu/text_weights.h"
#include "base/error.h"
#include "model/config.h"
#include "tensor/tensor.h"

namespace staticlm::test {

struct MiniVision {
  ModelConfig config;
  std::map<std::string, Tensor> tensors;

  // clip: the bound every clippable linear gets (+-clip); infinity turns clipping off in effect.
  explicit MiniVision(unsigned seed, float clip = 1e30f, DType dtype = DType::kF32) {
    config.text.hidden_size = 4;
    VisionConfig v;
    v.hidden_size = 16;
    v.intermediate_size = 24;
    v.num_hidden_layers = 2;
    v.num_attention_heads = 2;
    v.num_key_value_heads = 2;
    v.head_dim = 8;
    v.patch_size = 2;
    v.pooling_kernel_size = 3;
    v.position_embedding_size = 32;
    v.use_clipped_linears = true;
    config.vision = v;
    std::mt19937 rng(seed);
    auto rand = [&](const std::string& name, Shape shape, float scale, float offset = 0.0f) {
      std::normal_distribution<float> nd(offset, scale);
      std::vector<float> vals(static_cast<std::size_t>(shape.numel()));
      for (float& x : vals) x = nd(rng);
      tensors[name] = Tensor::from_f32(dtype, std::move(shape), vals);
    };
    auto scalar = [&](const std::string& name, float value) {
      tensors[name] = Tensor::from_f32(DType::kF32, Shape{}, std::vector<float>{value});
    };
    const std::string p = "model.vision_tower.";
    rand(p + "patch_embedder.input_proj.weight", {16, 12}, 0.3f);
    rand(p + "patch_embedder.position_embedding_table", {2, 32, 16}, 0.5f);
    for (int i = 0; i < 2; ++i) {
      const std::string l = p + "encoder.layers." + std::to_string(i) + ".";
      for (const char* lin : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}) {
        const std::string name = l + lin;
        const bool down = std::string(lin) == "mlp.down_proj", up = std::string(lin).find("mlp.") == 0 && !down;
        rand(name + ".linear.weight", up ? Shape{24, 16} : down ? Shape{16, 24} : Shape{16, 16}, 0.4f);
        scalar(name + ".input_min", -clip);
        scalar(name + ".input_max", clip);
        scalar(name + ".output_min", -clip);
        scalar(name + ".output_max", clip);
      }
      rand(l + "self_attn.q_norm.weight", {8}, 0.2f, 1.0f);
      rand(l + "self_attn.k_norm.weight", {8}, 0.2f, 1.0f);
      for (const char* norm : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                               "post_feedforward_layernorm"}) {
        rand(l + norm + ".weight", {16}, 0.2f, 1.0f);
      }
    }
    rand("model.embed_vision.embedding_projection.weight", {4, 16}, 0.3f);
  }

  cpu::WeightGetter getter() const {
    return [this](const std::string& name) {
      const auto it = tensors.find(name);
      if (it == tensors.end()) invalid_file("no tensor " + name);
      return it->second.view();
    };
  }
};

}  // namespace staticlm::test
