#include "backends/cpu/text_weights.h"

#include <cstdint>

#include "base/error.h"

namespace staticlm::cpu {

CpuTextWeights load_text_weights(const ModelConfig& config, const std::vector<LayerInfo>& layers,
                                 const WeightGetter& get) {
  const TextConfig& t = config.text;
  const std::string p = config.text_prefix();
  const std::int64_t d = t.hidden_size, ple = t.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(layers.size());
  CpuTextWeights w;
  auto matrix = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
    return load_weight_matrix(get, get(name), name, rows, cols, w.aligned_copies);
  };
  w.embed_tokens = matrix(p + "embed_tokens.weight", t.vocab_size, d);
  if (ple > 0) {
    w.embed_tokens_per_layer = matrix(p + "embed_tokens_per_layer.weight", t.vocab_size_per_layer_input, n_layers * ple);
    w.per_layer_model_projection = matrix(p + "per_layer_model_projection.weight", n_layers * ple, d);
    w.per_layer_projection_norm = weight_vector_f32(get, p + "per_layer_projection_norm.weight", ple);
  }
  w.final_norm = weight_vector_f32(get, p + "norm.weight", d);
  for (const LayerInfo& l : layers) {
    const std::string n = p + "layers." + std::to_string(l.index) + ".";
    CpuLayerWeights lw;
    lw.input_norm = weight_vector_f32(get, n + "input_layernorm.weight", d);
    lw.q_proj = matrix(n + "self_attn.q_proj.weight", l.q_width, d);
    lw.q_norm = weight_vector_f32(get, n + "self_attn.q_norm.weight", l.head_dim);
    if (l.owns_kv) {
      lw.k_proj = matrix(n + "self_attn.k_proj.weight", l.kv_width, d);
      lw.v_proj = matrix(n + "self_attn.v_proj.weight", l.kv_width, d);
      lw.k_norm = weight_vector_f32(get, n + "self_attn.k_norm.weight", l.head_dim);
    }
    lw.o_proj = matrix(n + "self_attn.o_proj.weight", d, l.q_width);
    lw.post_attention_norm = weight_vector_f32(get, n + "post_attention_layernorm.weight", d);
    lw.pre_feedforward_norm = weight_vector_f32(get, n + "pre_feedforward_layernorm.weight", d);
    lw.gate_proj = matrix(n + "mlp.gate_proj.weight", l.intermediate_size, d);
    lw.up_proj = matrix(n + "mlp.up_proj.weight", l.intermediate_size, d);
    lw.down_proj = matrix(n + "mlp.down_proj.weight", d, l.intermediate_size);
    lw.post_feedforward_norm = weight_vector_f32(get, n + "post_feedforward_layernorm.weight", d);
    if (ple > 0) {
      lw.ple_gate = matrix(n + "per_layer_input_gate.weight", ple, d);
      lw.ple_projection = matrix(n + "per_layer_projection.weight", d, ple);
      lw.post_ple_norm = weight_vector_f32(get, n + "post_per_layer_input_norm.weight", d);
    }
    lw.layer_scalar = weight_vector_f32(get, n + "layer_scalar", 1)[0];
    w.layers.push_back(std::move(lw));
  }
  return w;
}

std::vector<WeightMatrix*> streamed_matrices(CpuTextWeights& w) {
  std::vector<WeightMatrix*> out = {&w.embed_tokens, &w.per_layer_model_projection};
  for (CpuLayerWeights& l : w.layers) {
    for (WeightMatrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj,
                            &l.ple_gate, &l.ple_projection}) {
      out.push_back(m);
    }
  }
  return out;
}

void set_bf16_activations(CpuTextWeights& w, bool on) {
  for (WeightMatrix* m : {&w.embed_tokens, &w.embed_tokens_per_layer, &w.per_layer_model_projection}) {
    m->bf16_activations = on;
  }
  for (CpuLayerWeights& l : w.layers) {
    for (WeightMatrix* m : {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj,
                            &l.ple_gate, &l.ple_projection}) {
      m->bf16_activations = on;
    }
  }
}

}  // namespace staticlm::cpu
