#include "backends/subgraph_contract.h"

#include "base/error.h"

namespace staticlm {

std::string decoder_layer_prefill_name(int layer) { return "decoder_layer_prefill_" + std::to_string(layer); }
std::string decoder_layer_decode_name(int layer) { return "decoder_layer_decode_" + std::to_string(layer); }
std::string decoder_layer_append_name(int layer, std::int64_t q) {
  return "decoder_layer_append_q" + std::to_string(q) + "_" + std::to_string(layer);
}

void check_append_lengths(const std::vector<std::int64_t>& lengths, std::int64_t max_seq) {
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const std::int64_t q = lengths[i];
    if (q < 1 || q > max_seq - 1) {
      invalid_argument("append bucket " + std::to_string(q) + " must be within [1, " + std::to_string(max_seq - 1) +
                       "] for max_seq " + std::to_string(max_seq));
    }
    if (i > 0 && q <= lengths[i - 1]) {
      invalid_argument("append buckets must be strictly increasing: " + std::to_string(q) + " follows " +
                       std::to_string(lengths[i - 1]));
    }
  }
}

namespace {

TensorSpec f32(std::string name, Shape shape, int dynamic_axis = -1) {
  return {std::move(name), DType::kF32, std::move(shape), dynamic_axis};
}

enum class LayerGraph { kPrefill, kDecode, kAppend };

// `q`: the bucket of an append graph (its query rows).
SubgraphSignature decoder_layer(const LayerInfo& l, const ModelConfig& c, std::int64_t s, LayerGraph kind,
                                std::int64_t q = 0) {
  const std::int64_t d = c.text.hidden_size, p = c.text.hidden_size_per_layer_input;
  const std::int64_t rows = kind == LayerGraph::kDecode ? 1 : kind == LayerGraph::kAppend ? q : s;
  SubgraphSignature g;
  g.name = kind == LayerGraph::kDecode   ? decoder_layer_decode_name(l.index)
           : kind == LayerGraph::kAppend ? decoder_layer_append_name(l.index, q)
                                         : decoder_layer_prefill_name(l.index);
  g.inputs.push_back(f32("hidden_states", {1, rows, d}));
  g.inputs.push_back(f32("attention_mask", kind == LayerGraph::kDecode ? Shape{1, 1, s} : Shape{1, 1, rows, s}));
  g.inputs.push_back(f32("cos", {1, rows, l.head_dim}));
  g.inputs.push_back(f32("sin", {1, rows, l.head_dim}));
  if (p > 0) g.inputs.push_back(f32("per_layer_input", {1, rows, p}));
  if (!l.owns_kv) {
    // Consumers read the donor's K/V: prefill its S new rows; decode and append
    // cat(past, new rows) = S rows.
    g.inputs.push_back(f32("shared_key", {1, l.num_kv_heads, s, l.head_dim}));
    g.inputs.push_back(f32("shared_value", {1, l.num_kv_heads, s, l.head_dim}));
  } else if (kind != LayerGraph::kPrefill) {
    // The fixed past: decode S-1 slots, append S-Q (the new rows take the last Q key slots).
    g.inputs.push_back(f32("past_key", {1, l.num_kv_heads, s - rows, l.head_dim}));
    g.inputs.push_back(f32("past_value", {1, l.num_kv_heads, s - rows, l.head_dim}));
  }
  g.outputs.push_back(f32("hidden_states", {1, rows, d}));
  if (l.owns_kv) {
    g.outputs.push_back(f32("new_key", {1, l.num_kv_heads, rows, l.head_dim}));
    g.outputs.push_back(f32("new_value", {1, l.num_kv_heads, rows, l.head_dim}));
  }
  return g;
}

}  // namespace

std::vector<SubgraphSignature> gemma4_subgraph_signatures(const ModelConfig& config,
                                                          const std::vector<LayerInfo>& layers,
                                                          const SubgraphProfile& profile) {
  const TextConfig& t = config.text;
  const std::int64_t s = profile.max_seq, d = t.hidden_size, p = t.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(layers.size());
  if (s < 2) invalid_argument("subgraph profile: max_seq " + std::to_string(s) + " must be at least 2");
  std::vector<SubgraphSignature> out;
  if (config.vision && profile.visual_start_idx) {
    const std::int64_t start = *profile.visual_start_idx, n = profile.num_visual_tokens;
    if (start < 0 || n <= 0 || start + n > s) {
      invalid_argument("subgraph profile: image span [" + std::to_string(start) + ", " + std::to_string(start + n) +
                       ") does not fit in max_seq " + std::to_string(s));
    }
    out.push_back({kVisionPrefill,
                   {f32("pixel_values", {1, profile.num_patches, profile.patch_vector_size})},
                   {f32("image_embeds", {n, d})}});
    out.push_back({kMultimodalFusion,
                   {f32("text_embeds", {1, s, d}), f32("visual_embeds", {n, d})},
                   {f32("inputs_embeds", {1, s, d})}});
  }
  out.push_back({kTokenEmbedding,
                 {{"input_ids", DType::kI64, Shape{1, s}, 1}},
                 {f32("inputs_embeds", {1, s, d}, 1)}});
  if (p > 0) {
    out.push_back({kPleEmbedding,
                   {{"input_ids", DType::kI64, Shape{1, s}, 1}},
                   {f32("per_layer_token_inputs", {1, s, n_layers, p}, 1)}});
    out.push_back({kPleProjection,
                   {f32("inputs_embeds", {1, s, d}, 1), f32("per_layer_token_inputs", {1, s, n_layers, p}, 1)},
                   {f32("per_layer_inputs", {1, s, n_layers, p}, 1)}});
  }
  check_append_lengths(profile.append_lengths, s);
  for (const LayerInfo& l : layers) out.push_back(decoder_layer(l, config, s, LayerGraph::kPrefill));
  for (const LayerInfo& l : layers) out.push_back(decoder_layer(l, config, s, LayerGraph::kDecode));
  for (std::int64_t q : profile.append_lengths) {
    for (const LayerInfo& l : layers) out.push_back(decoder_layer(l, config, s, LayerGraph::kAppend, q));
  }
  out.push_back({kLmHead, {f32("hidden_states", {1, 1, d})}, {f32("logits", {1, 1, t.vocab_size})}});
  return out;
}

namespace {

void check_tensor(const SubgraphSignature& sig, const TensorSpec& spec, DType dtype, const Shape& shape,
                  const void* data, const char* role, std::int64_t& dynamic) {
  // Named only on failure: building the string for every tensor of every call cost a decode
  // step 35 layers x 10 tensors of allocations.
  const auto where = [&] { return "subgraph " + sig.name + ": " + role + " " + spec.name; };
  if (data == nullptr) invalid_argument(where() + " has no buffer");
  if (dtype != spec.dtype) {
    invalid_argument(where() + " has dtype " + dtype_name(dtype) + ", expected " + dtype_name(spec.dtype));
  }
  bool ok = shape.rank() == spec.shape.rank();
  for (int a = 0; ok && a < shape.rank(); ++a) {
    if (a == spec.dynamic_axis) {
      ok = shape[a] >= 1 && shape[a] <= spec.shape[a] && (dynamic < 0 || shape[a] == dynamic);
      if (ok) dynamic = shape[a];
    } else {
      ok = shape[a] == spec.shape[a];
    }
  }
  if (!ok) {
    std::string expect = spec.shape.to_string();
    if (spec.dynamic_axis >= 0) {
      expect += " (axis " + std::to_string(spec.dynamic_axis) + " any of 1.." +
                std::to_string(spec.shape[spec.dynamic_axis]) +
                (dynamic > 0 ? ", " + std::to_string(dynamic) + " in this call" : std::string()) + ")";
    }
    invalid_argument(where() + " has shape " + shape.to_string() + ", expected " + expect);
  }
}

}  // namespace

std::int64_t check_subgraph_call(const SubgraphSignature& sig, std::span<const TensorView> inputs,
                                 std::span<const TensorBuffer> outputs) {
  if (inputs.size() != sig.inputs.size() || outputs.size() != sig.outputs.size()) {
    invalid_argument("subgraph " + sig.name + ": called with " + std::to_string(inputs.size()) + " inputs and " +
                     std::to_string(outputs.size()) + " outputs, expected " + std::to_string(sig.inputs.size()) +
                     " and " + std::to_string(sig.outputs.size()));
  }
  std::int64_t dynamic = -1;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    check_tensor(sig, sig.inputs[i], inputs[i].dtype, inputs[i].shape, inputs[i].data, "input", dynamic);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    check_tensor(sig, sig.outputs[i], outputs[i].dtype, outputs[i].shape, outputs[i].data, "output", dynamic);
  }
  return dynamic;
}

}  // namespace staticlm
