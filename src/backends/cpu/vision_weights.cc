#include "backends/cpu/vision_weights.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.h"

namespace staticlm::cpu {

namespace {

// A 0-d (or one-element) clip bound; NaN would silently turn every clamp into a no-op or NaN.
float bound_f32(const WeightGetter& get, const std::string& name) {
  const TensorView v = get(name);
  if (!dtype_is_float(v.dtype) || v.numel() != 1) {
    invalid_file("weight " + name + ": " + dtype_name(v.dtype) + " " + v.shape.to_string() +
                 ", expected a float scalar (clip bound)");
  }
  const float b = v.get_f32(0);
  if (std::isnan(b)) invalid_file("weight " + name + ": clip bound is NaN, expected a number or +-inf");
  return b;
}

}  // namespace

CpuVisionWeights load_vision_weights(const ModelConfig& config, const WeightGetter& get) {
  if (!config.vision) internal_error("load_vision_weights: the model has no vision config");
  const VisionConfig& v = *config.vision;
  // The 26B / 31B models' std_bias / std_scale step is not implemented (E2B has none).
  if (v.standardize) unsupported("vision_config.standardize = true is not supported by the cpu vision tower");
  if (v.head_dim % 4 != 0) {
    invalid_file("vision_config.head_dim " + std::to_string(v.head_dim) + " must be divisible by 4 (2-D RoPE)");
  }
  const std::int64_t dv = v.hidden_size, hd = v.head_dim;
  CpuVisionWeights w;
  auto matrix = [&](const std::string& name, TensorView view, std::int64_t rows, std::int64_t cols) {
    return load_weight_matrix(get, view, name, rows, cols, w.aligned_copies);
  };
  auto clipped = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
    ClippedLinear c;
    c.w = matrix(name + ".linear.weight", get(name + ".linear.weight"), rows, cols);
    if (v.use_clipped_linears) {
      c.input_min = bound_f32(get, name + ".input_min");
      c.input_max = bound_f32(get, name + ".input_max");
      c.output_min = bound_f32(get, name + ".output_min");
      c.output_max = bound_f32(get, name + ".output_max");
    }
    return c;
  };
  const std::string p = "model.vision_tower.";
  const std::string in_name = p + "patch_embedder.input_proj.weight";
  w.input_proj = matrix(in_name, get(in_name), dv, 3 * v.patch_size * v.patch_size);
  const std::string pos_name = p + "patch_embedder.position_embedding_table";
  const TensorView table = get(pos_name);
  if (table.shape != Shape{2, v.position_embedding_size, dv}) {
    invalid_file("weight " + pos_name + ": shape " + table.shape.to_string() + ", expected [2, " +
                 std::to_string(v.position_embedding_size) + ", " + std::to_string(dv) + "]");
  }
  // Viewed as [2 * size, Dv]: row x of the first half, row size + y of the second.
  w.position_table = matrix(pos_name, TensorView{table.dtype, Shape{2 * v.position_embedding_size, dv}, table.data},
                            2 * v.position_embedding_size, dv);
  const std::int64_t qw = v.num_attention_heads * hd, kvw = v.num_key_value_heads * hd;
  for (std::int64_t i = 0; i < v.num_hidden_layers; ++i) {
    const std::string l = p + "encoder.layers." + std::to_string(i) + ".";
    CpuVisionLayerWeights lw;
    lw.q_proj = clipped(l + "self_attn.q_proj", qw, dv);
    lw.k_proj = clipped(l + "self_attn.k_proj", kvw, dv);
    lw.v_proj = clipped(l + "self_attn.v_proj", kvw, dv);
    lw.o_proj = clipped(l + "self_attn.o_proj", dv, qw);
    lw.q_norm = weight_vector_f32(get, l + "self_attn.q_norm.weight", hd);
    lw.k_norm = weight_vector_f32(get, l + "self_attn.k_norm.weight", hd);
    lw.input_norm = weight_vector_f32(get, l + "input_layernorm.weight", dv);
    lw.post_attention_norm = weight_vector_f32(get, l + "post_attention_layernorm.weight", dv);
    lw.pre_feedforward_norm = weight_vector_f32(get, l + "pre_feedforward_layernorm.weight", dv);
    lw.post_feedforward_norm = weight_vector_f32(get, l + "post_feedforward_layernorm.weight", dv);
    lw.gate_proj = clipped(l + "mlp.gate_proj", v.intermediate_size, dv);
    lw.up_proj = clipped(l + "mlp.up_proj", v.intermediate_size, dv);
    lw.down_proj = clipped(l + "mlp.down_proj", dv, v.intermediate_size);
    w.layers.push_back(std::move(lw));
  }
  const std::string proj = "model.embed_vision.embedding_projection.weight";
  w.embedding_projection = matrix(proj, get(proj), config.text.hidden_size, dv);
  return w;
}

void set_bf16_activations(CpuVisionWeights& w, bool on) {
  w.input_proj.bf16_activations = on;
  w.embedding_projection.bf16_activations = on;
  for (CpuVisionLayerWeights& l : w.layers) {
    for (ClippedLinear* c : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
      c->w.bf16_activations = on;
    }
  }
}

}  // namespace staticlm::cpu
