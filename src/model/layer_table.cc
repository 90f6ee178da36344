// Per-layer table: the rules of Gemma4TextAttention / Gemma4TextMLP.__init__ in
// modeling_gemma4.py, written out once so the runtime never re-derives them.
#include "model/layer_table.h"

#include <cmath>

#include "base/error.h"

namespace staticlm {

std::vector<std::string> periodic_layer_types(std::int64_t num_layers, int period) {
  if (period <= 0) invalid_argument("periodic_layer_types: period must be positive, got " + std::to_string(period));
  std::vector<std::string> types;
  for (std::int64_t i = 0; i < num_layers; ++i)
    types.emplace_back((i + 1) % period != 0 ? kSlidingAttention : kFullAttention);
  if (!types.empty()) types.back() = kFullAttention;
  return types;
}

// configuration_gemma4.py: sliding unless (i + 1) % 6 == 0; the last layer is forced full.
std::vector<std::string> default_layer_types(std::int64_t num_layers) { return periodic_layer_types(num_layers, 6); }

int first_kv_shared_layer(const TextConfig& text) {
  return static_cast<int>(text.num_hidden_layers - text.num_kv_shared_layers);
}

std::vector<LayerInfo> build_layer_table(const TextConfig& text) { return build_layer_table(text, "text config: "); }

std::vector<LayerInfo> build_layer_table(const TextConfig& t, const std::string& context) {
  const auto n = static_cast<int>(t.num_hidden_layers);
  if (static_cast<std::int64_t>(t.layer_types.size()) != t.num_hidden_layers)
    invalid_file(context + "layer_types: has " + std::to_string(t.layer_types.size()) +
                 " entries, expected num_hidden_layers = " + std::to_string(t.num_hidden_layers));
  if (t.num_kv_shared_layers < 0 || t.num_kv_shared_layers >= t.num_hidden_layers)
    invalid_file(context + "num_kv_shared_layers: " + std::to_string(t.num_kv_shared_layers) +
                 " is out of range (expected 0 to " + std::to_string(t.num_hidden_layers - 1) + ")");
  const int first_shared = first_kv_shared_layer(t);

  std::vector<LayerInfo> table(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    LayerInfo& L = table[static_cast<std::size_t>(i)];
    L.index = i;
    L.type = t.layer_types[static_cast<std::size_t>(i)];
    if (L.type != kSlidingAttention && L.type != kFullAttention)
      invalid_file(context + "layer_types[" + std::to_string(i) + "]: unknown layer type \"" + L.type +
                   "\" (expected \"sliding_attention\" or \"full_attention\")");
    L.sliding = L.type == kSlidingAttention;

    // Older configs: full layers use global_head_dim. Newer ones: per_layer_config decides, and
    // a layer it does not list keeps the base values.
    L.head_dim = t.per_layer_config.empty() && !L.sliding ? t.global_head_dim : t.head_dim;
    L.num_heads = t.num_attention_heads;
    L.num_kv_heads = t.num_key_value_heads;
    const auto override_it = t.per_layer_config.find(i);
    if (override_it != t.per_layer_config.end()) {
      L.head_dim = override_it->second.head_dim.value_or(L.head_dim);
      L.num_heads = override_it->second.num_attention_heads.value_or(L.num_heads);
      L.num_kv_heads = override_it->second.num_key_value_heads.value_or(L.num_kv_heads);
    }
    const std::string where =
        context + (override_it != t.per_layer_config.end() ? "per_layer_config." + std::to_string(i)
                                                           : "layer " + std::to_string(i));
    if (L.head_dim <= 0 || L.head_dim % 2 != 0)
      invalid_file(where + ": head_dim " + std::to_string(L.head_dim) + " is not a positive even number");
    if (L.num_heads <= 0 || L.num_kv_heads <= 0 || L.num_heads % L.num_kv_heads != 0)
      invalid_file(where + ": num_attention_heads " + std::to_string(L.num_heads) +
                   " is not a positive multiple of num_key_value_heads " + std::to_string(L.num_kv_heads));
    L.q_width = L.num_heads * L.head_dim;

    L.owns_kv = i < first_shared;
    L.kv_source = i;
    if (!L.owns_kv) {
      // The donor: the last non-shared layer of the same type.
      int donor = -1;
      for (int j = first_shared - 1; j >= 0 && donor < 0; --j)
        if (t.layer_types[static_cast<std::size_t>(j)] == L.type) donor = j;
      if (donor < 0)
        invalid_file(context + "num_kv_shared_layers: layer " + std::to_string(i) + " (" + L.type +
                     ") shares K/V but no layer before " + std::to_string(first_shared) + " has that type");
      L.kv_source = donor;
      LayerInfo& D = table[static_cast<std::size_t>(donor)];
      if (D.head_dim != L.head_dim || D.num_kv_heads != L.num_kv_heads)
        invalid_file(context + "per_layer_config: layer " + std::to_string(i) + " reads K/V of layer " +
                     std::to_string(donor) + " but their head_dim / num_key_value_heads differ");
      D.stores_shared_kv = true;
    }
    L.kv_width = L.owns_kv ? L.num_kv_heads * L.head_dim : 0;
    // Gemma4TextMLP: double width on KV-shared layers (first_shared > 0 always holds here).
    L.intermediate_size = t.intermediate_size * (t.use_double_wide_mlp && !L.owns_kv ? 2 : 1);

    auto rope = t.rope_parameters.find(L.type);
    if (rope == t.rope_parameters.end())
      invalid_file(context + "rope_parameters: no entry for \"" + L.type + "\" (used by layer " + std::to_string(i) +
                   ")");
    const RopeParameters& r = rope->second;
    L.rope_type = r.rope_type;
    L.rope_theta = r.rope_theta;
    if (r.rope_type == "proportional") {
      if (!(r.partial_rotary_factor > 0 && r.partial_rotary_factor <= 1))
        invalid_file(context + "rope_parameters." + L.type + ".partial_rotary_factor: expected a number in (0, 1]");
      // _compute_proportional_rope_parameters: rope_angles = int(p * head_dim // 2).
      L.rotary_dims =
          2 * static_cast<std::int64_t>(std::floor(r.partial_rotary_factor * static_cast<double>(L.head_dim) / 2));
    } else if (r.rope_type == "default") {
      // The default RoPE table is sized by text.head_dim upstream, whatever the layer's head_dim.
      if (L.head_dim != t.head_dim)
        unsupported(context + "rope_parameters." + L.type + ": rope_type \"" + r.rope_type + "\" on layer " +
                    std::to_string(i) + " (head_dim " + std::to_string(L.head_dim) +
                    ") is not supported: upstream "
                    "sizes the default RoPE by head_dim = " +
                    std::to_string(t.head_dim));
      L.rotary_dims = L.head_dim;
    } else {
      unsupported(context + "rope_parameters." + L.type + ".rope_type: \"" + r.rope_type +
                  "\" is not supported (expected \"default\" or \"proportional\")");
    }
  }
  return table;
}

}  // namespace staticlm
