// The per-layer table derived from the text config: each decoder layer's attention type,
// head_dim, projection widths, MLP width and where its K/V comes from (spec/gemma4.md 1.2).
// The table is a plain vector of values, owned by the caller.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace staticlm {

struct LayerInfo {
  int index = 0;
  std::string type;  // kSlidingAttention or kFullAttention
  bool sliding = false;
  std::int64_t head_dim = 0;  // head_dim (sliding) or global_head_dim (full), or per_layer_config's
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t q_width = 0;            // num_heads * head_dim: q_proj out, o_proj in
  std::int64_t kv_width = 0;           // num_kv_heads * head_dim: k_proj / v_proj out (0 when shared)
  std::int64_t intermediate_size = 0;  // doubled on KV-shared layers with use_double_wide_mlp
  bool owns_kv = true;                 // false for the last num_kv_shared_layers layers
  int kv_source = 0;                   // own index when owns_kv, else the donor layer
  bool stores_shared_kv = false;       // a donor some shared layer reads (E2B: layers 13 and 14)
  std::string rope_type;               // "default" or "proportional"
  double rope_theta = 0;
  std::int64_t rotary_dims = 0;  // dims that rotate (head_dim, or 2*int(p*head_dim/2) proportional)
  bool operator==(const LayerInfo&) const = default;
};

// Throws kInvalidFile (naming config.json's fields) when the table cannot be built: a
// layer_types list of the wrong length or with an unknown type, a shared layer with no donor
// of its type (or one of another head_dim / KV head count), a type with no rope_parameters, a
// proportional partial_rotary_factor outside (0, 1]. Throws kUnsupported for a "default" RoPE on
// a layer whose head_dim is not text.head_dim (upstream sizes that table by text.head_dim).
// `context` starts every message, e.g. "config.json: text_config." (the one-argument form
// uses "text config: ").
std::vector<LayerInfo> build_layer_table(const TextConfig& text);
std::vector<LayerInfo> build_layer_table(const TextConfig& text, const std::string& context);

// Default layer_types for n layers, as upstream: 5 sliding then 1 full, repeated (full at
// 5, 11, 17, ...), and the last layer full. Same as periodic_layer_types(n, 6).
std::vector<std::string> default_layer_types(std::int64_t num_layers);

// Every `period`-th layer full (period - 1 sliding, then 1 full), and the last layer full.
// E2B is periodic_layer_types(35, 5): full at 4, 9, ..., 34.
std::vector<std::string> periodic_layer_types(std::int64_t num_layers, int period);

// Index of the first KV-shared layer: num_hidden_layers - num_kv_shared_layers (E2B: 15).
int first_kv_shared_layer(const TextConfig& text);

}  // namespace staticlm
