// RoPE tables the host computes for the decoder-layer subgraphs (spec/gemma4.md 2.1): cos and
// sin [positions, head_dim] for the "default" and "proportional" kinds, in either sine
// convention the exported graphs use (spec/static-runtime.md (g) 9). The caller owns buffers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/layer_table.h"
#include "staticlm/backend.h"  // RopeSine: the convention the graphs apply

namespace staticlm {

// Inverse frequencies [head_dim / 2], as upstream computes them in float32:
//   i < rotary_dims/2: 1 / theta^(2i / head_dim)    (the denominator is the whole head_dim)
//   otherwise:         0 (proportional RoPE: those dims do not rotate; cos 1, sin 0)
// "default" RoPE has rotary_dims == head_dim. Throws kInvalidArgument for an odd head_dim, or
// rotary_dims odd or outside [0, head_dim].
std::vector<float> rope_inv_freq(double theta, std::int64_t head_dim, std::int64_t rotary_dims);
inline std::vector<float> rope_inv_freq(const LayerInfo& layer) {
  return rope_inv_freq(layer.rope_theta, layer.head_dim, layer.rotary_dims);
}

// cos, sin: [count, 2 * inv_freq.size()] row-major, for positions first .. first+count-1:
//   angle = float(position) * inv_freq[i] (float32), emb = concat(angles, angles),
//   cos = cos(emb), sin = sin(emb), then the sine convention. Throws kInvalidArgument when the
// buffers do not have count * head_dim floats.
void build_rope_table(std::span<const float> inv_freq, std::int64_t first_position, std::int64_t count,
                      RopeSine sine, std::span<float> cos, std::span<float> sin);

// Layers with equal inverse frequencies share one table (Gemma 4: one for the sliding layers,
// one for the full ones), so a step builds each table once, not once per layer.
struct RopeTableMap {
  std::vector<std::size_t> table_of;  // per layer index: its table
  std::vector<int> first_layer;       // per table: a layer whose inv_freq (and head_dim) it holds
};
// inv_freq: per layer index, as RuntimeState holds them.
RopeTableMap distinct_rope_tables(const std::vector<std::vector<float>>& inv_freq, const std::vector<LayerInfo>& layers);

}  // namespace staticlm
