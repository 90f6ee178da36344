// Expected tensor names and shapes. Text names: Gemma4TextModel / Gemma4TextDecoderLayer in
// modeling_gemma4.py (spec 2.6). Vision names: checked against modeling_gemma4.py
// (Gemma4VisionPatchEmbedder, Gemma4VisionEncoderLayer, Gemma4ClippableLinear,
// Gemma4MultimodalEmbedder, Gemma4Model.__init__) and convert_gemma4_weights.py
// (convert_vision_encoder_weights writes "model.vision_tower." + these names, and
// "model.embed_vision.embedding_projection.weight").
#include "model/weights.h"

#include <sstream>

#include "base/error.h"
#include "model/layer_table.h"
#include "quant/formats.h"

namespace staticlm {
namespace {

void add(std::vector<WeightSpec>& out, std::string name, Shape shape) {
  out.push_back({std::move(name), std::move(shape)});
}

std::vector<WeightSpec> text_weights(const ModelConfig& config) {
  const TextConfig& t = config.text;
  const std::string p = config.text_prefix();
  const std::int64_t H = t.hidden_size;
  const std::int64_t P = t.hidden_size_per_layer_input;
  const std::int64_t L = t.num_hidden_layers;
  std::vector<WeightSpec> out;

  add(out, p + "embed_tokens.weight", {t.vocab_size, H});
  if (P > 0) {
    // Per-layer embeddings: one packed table, layer i uses columns i*P .. i*P+P-1.
    add(out, p + "embed_tokens_per_layer.weight", {t.vocab_size_per_layer_input, L * P});
    add(out, p + "per_layer_model_projection.weight", {L * P, H});
    add(out, p + "per_layer_projection_norm.weight", {P});
  }
  add(out, p + "norm.weight", {H});

  for (const LayerInfo& layer : build_layer_table(t)) {
    const std::string l = p + "layers." + std::to_string(layer.index) + ".";
    const std::int64_t hd = layer.head_dim, F = layer.intermediate_size;
    add(out, l + "input_layernorm.weight", {H});
    add(out, l + "self_attn.q_proj.weight", {layer.q_width, H});
    add(out, l + "self_attn.q_norm.weight", {hd});
    if (layer.owns_kv) {
      // KV-shared layers read their donor's K/V and have no k/v weights (v_norm has none at all).
      add(out, l + "self_attn.k_proj.weight", {layer.kv_width, H});
      add(out, l + "self_attn.v_proj.weight", {layer.kv_width, H});
      add(out, l + "self_attn.k_norm.weight", {hd});
    }
    add(out, l + "self_attn.o_proj.weight", {H, layer.q_width});
    add(out, l + "post_attention_layernorm.weight", {H});
    add(out, l + "pre_feedforward_layernorm.weight", {H});
    add(out, l + "mlp.gate_proj.weight", {F, H});
    add(out, l + "mlp.up_proj.weight", {F, H});
    add(out, l + "mlp.down_proj.weight", {H, F});
    add(out, l + "post_feedforward_layernorm.weight", {H});
    if (P > 0) {
      add(out, l + "per_layer_input_gate.weight", {P, H});
      add(out, l + "per_layer_projection.weight", {H, P});
      add(out, l + "post_per_layer_input_norm.weight", {H});
    }
    add(out, l + "layer_scalar", {1});  // register_buffer("layer_scalar", torch.ones(1))
  }
  return out;
}

// Gemma4ClippableLinear: the weight lives under ".linear"; with use_clipped_linears it also
// registers four 0-d buffers, torch.tensor(+-inf), so their safetensors shape is [].
void add_clippable(std::vector<WeightSpec>& out, const std::string& name, std::int64_t out_features,
                   std::int64_t in_features, bool clipped) {
  add(out, name + ".linear.weight", {out_features, in_features});
  if (!clipped) return;
  for (const char* bound : {"input_min", "input_max", "output_min", "output_max"})
    add(out, name + "." + bound, Shape{});
}

std::vector<WeightSpec> vision_weights(const ModelConfig& config) {
  std::vector<WeightSpec> out;
  if (!config.multimodal() || !config.vision) return out;
  const VisionConfig& v = *config.vision;
  const std::string p = "model.vision_tower.";
  const std::int64_t D = v.hidden_size, hd = v.head_dim;
  const std::int64_t q_width = v.num_attention_heads * hd, kv_width = v.num_key_value_heads * hd;
  const bool clip = v.use_clipped_linears;

  // Patch embedder: input_proj = nn.Linear(3 * patch_size**2, hidden_size, bias=False);
  // position_embedding_table = nn.Parameter(ones(2, position_embedding_size, hidden_size)).
  add(out, p + "patch_embedder.input_proj.weight", {D, 3 * v.patch_size * v.patch_size});
  add(out, p + "patch_embedder.position_embedding_table", {2, v.position_embedding_size, D});

  for (std::int64_t i = 0; i < v.num_hidden_layers; ++i) {
    const std::string l = p + "encoder.layers." + std::to_string(i) + ".";
    add_clippable(out, l + "self_attn.q_proj", q_width, D, clip);
    add_clippable(out, l + "self_attn.k_proj", kv_width, D, clip);
    add_clippable(out, l + "self_attn.v_proj", kv_width, D, clip);
    add_clippable(out, l + "self_attn.o_proj", D, q_width, clip);
    add(out, l + "self_attn.q_norm.weight", {hd});  // Gemma4RMSNorm(dim=config.head_dim); v_norm has no weight
    add(out, l + "self_attn.k_norm.weight", {hd});
    add(out, l + "input_layernorm.weight", {D});
    add(out, l + "post_attention_layernorm.weight", {D});
    add(out, l + "pre_feedforward_layernorm.weight", {D});
    add(out, l + "post_feedforward_layernorm.weight", {D});
    add_clippable(out, l + "mlp.gate_proj", v.intermediate_size, D, clip);
    add_clippable(out, l + "mlp.up_proj", v.intermediate_size, D, clip);
    add_clippable(out, l + "mlp.down_proj", D, v.intermediate_size, clip);
  }
  if (v.standardize) {
    // Gemma4VisionModel registers these buffers only when standardize (26B/31B).
    add(out, p + "std_bias", {D});
    add(out, p + "std_scale", {D});
  }
  // Gemma4MultimodalEmbedder(vision_config, text_config): Linear(vision hidden -> text hidden);
  // its pre-projection RMSNorm has no weight.
  add(out, "model.embed_vision.embedding_projection.weight", {config.text.hidden_size, D});
  return out;
}

// Checked: a config at the parser's size limits can still describe more than 2^63 elements.
std::int64_t total_elements(const std::vector<WeightSpec>& specs) {
  std::int64_t total = 0;
  for (const WeightSpec& s : specs) {
    std::int64_t n = 1;
    bool overflow = false;
    for (std::int64_t d : s.shape.dims()) overflow |= __builtin_mul_overflow(n, d, &n);
    overflow |= __builtin_add_overflow(total, n, &total);
    if (overflow)
      out_of_range("the model config describes more than 2^63 parameters (at " + s.name + " " + s.shape.to_string() +
                   ")");
  }
  return total;
}

}  // namespace

std::vector<WeightSpec> expected_weights(const ModelConfig& config) {
  std::vector<WeightSpec> out = text_weights(config);
  std::vector<WeightSpec> vision = vision_weights(config);
  out.insert(out.end(), std::make_move_iterator(vision.begin()), std::make_move_iterator(vision.end()));
  return out;
}

ParameterCount count_parameters(const ModelConfig& config) {
  return {total_elements(text_weights(config)), total_elements(vision_weights(config))};
}

void check_weights(const ModelConfig& config, const TensorLookup& lookup, const std::string& source) {
  std::vector<std::string> problems;
  for (const WeightSpec& spec : expected_weights(config)) {
    const std::optional<TensorInfo> found = lookup(spec.name);
    if (!found) {
      problems.push_back("missing " + spec.name + " " + spec.shape.to_string());
      continue;
    }
    if (found->shape != spec.shape)
      problems.push_back(spec.name + " has shape " + found->shape.to_string() + ", expected " + spec.shape.to_string());
    const DType t = found->dtype;
    const bool quantized =
        (t == DType::kI8 || t == DType::kI4 || t == DType::kU4 || t == DType::kU8) && spec.shape.rank() == 2;
    for (const char* companion : {"_scale", "_zero_point"}) {
      const bool needed = companion[1] == 's' || t == DType::kU4 || t == DType::kU8;  // zero points: npu-w4 only
      if (!quantized || !needed) continue;
      const std::optional<TensorInfo> c = lookup(spec.name + companion);
      if (!c) {
        problems.push_back(spec.name + " is quantized (" + dtype_name(t) + ") but " + spec.name + companion +
                           " is missing");
        continue;
      }
      // The layout the loader checks (quantized_weight_matrix): q4 f16 per 32 columns, the
      // others f32 per row; npu-w4 zero points u8 per row.
      const std::int64_t rows = spec.shape[0], cols = spec.shape[1];
      const bool scale = companion[1] == 's';
      const DType want_dtype = !scale ? DType::kU8 : t == DType::kI4 ? DType::kF16 : DType::kF32;
      const Shape want = scale && t == DType::kI4 ? Shape{rows, cols / 32} : Shape{rows};
      if (c->dtype != want_dtype || c->shape != want) {
        problems.push_back(spec.name + companion + " is " + dtype_name(c->dtype) + " " + c->shape.to_string() + ", expected " +
                           dtype_name(want_dtype) + " " + want.to_string());
      }
    }
    if (quantized && t == DType::kI4 && spec.shape[1] % 32 != 0) {
      problems.push_back(spec.name + " is q4 (I4) with " + std::to_string(spec.shape[1]) + " columns, not a multiple of 32");
    }
    if (!dtype_is_float(found->dtype) && !quantized)
      problems.push_back(spec.name + " has dtype " + dtype_name(found->dtype) + ", expected a float type");
  }
  if (problems.empty()) return;
  std::ostringstream msg;
  msg << source << ": does not match the model config: " << problems.size()
      << (problems.size() == 1 ? " problem: " : " problems: ");
  for (std::size_t i = 0; i < problems.size(); ++i) msg << (i ? "; " : "") << problems[i];
  invalid_file(msg.str());
}

void validate_weights(const ModelConfig& config, const TensorStore& store) {
  check_weights(
      config,
      [&store](const std::string& name) -> std::optional<TensorInfo> {
        if (!store.contains(name)) return std::nullopt;
        const TensorView view = store.get(name);
        return TensorInfo{view.dtype, view.shape};
      },
      store.source());
  // U4 zero points past 15 cannot be a 4-bit zero point: refused here too, so every command (info
  // included) says what the CPU backend's loader says.
  for (const WeightSpec& spec : expected_weights(config)) {
    const std::string zp = spec.name + "_zero_point";
    if (!store.contains(spec.name) || store.get(spec.name).dtype != DType::kU4 || !store.contains(zp)) continue;
    const TensorView z = store.get(zp);
    if (z.dtype != DType::kU8) continue;  // check_weights named it
    quant::check_u4_zero_points(static_cast<const std::uint8_t*>(z.data), z.numel(), store.source() + ": weight " + zp);
  }
}

}  // namespace staticlm
