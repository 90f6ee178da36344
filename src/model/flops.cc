#include "model/flops.h"

#include <algorithm>

namespace staticlm {

std::int64_t causal_attention_pairs(std::int64_t n, std::int64_t sliding_window, bool sliding) {
  if (n <= 0) return 0;
  const std::int64_t full = n * (n + 1) / 2;
  if (!sliding || sliding_window >= n) return full;
  // Queries 0..w-1 see q+1 keys; every later one sees exactly w.
  const std::int64_t w = std::max<std::int64_t>(sliding_window, 1);
  return w * (w + 1) / 2 + (n - w) * w;
}

std::int64_t prefill_flops(const ModelConfig& config, const std::vector<LayerInfo>& layers, std::int64_t n) {
  const TextConfig& t = config.text;
  const std::int64_t d = t.hidden_size, p = t.hidden_size_per_layer_input;
  std::int64_t macs_per_row = 0, attention = 0;
  for (const LayerInfo& l : layers) {
    macs_per_row += d * l.q_width + l.q_width * d;            // q_proj, o_proj
    if (l.owns_kv) macs_per_row += 2 * d * l.kv_width;        // k_proj, v_proj
    macs_per_row += 3 * d * l.intermediate_size;              // gate, up, down
    if (p > 0) macs_per_row += 2 * d * p;                     // per_layer_input_gate, per_layer_projection
    attention += 4 * l.num_heads * l.head_dim * causal_attention_pairs(n, t.sliding_window, l.sliding);
  }
  std::int64_t flops = 2 * n * macs_per_row + attention;
  if (p > 0) flops += 2 * n * d * (static_cast<std::int64_t>(layers.size()) * p);  // per_layer_model_projection
  flops += 2 * t.vocab_size * d;  // LM head on the last row
  return flops;
}

std::int64_t append_flops(const ModelConfig& config, const std::vector<LayerInfo>& layers, std::int64_t past,
                          std::int64_t n_tokens) {
  if (past == 0) return prefill_flops(config, layers, n_tokens);
  const std::int64_t lm_head = 2 * config.text.vocab_size * config.text.hidden_size;
  return prefill_flops(config, layers, past + n_tokens) - prefill_flops(config, layers, past) + lm_head;
}

std::int64_t vision_encode_flops(const VisionConfig& v, std::int64_t text_hidden_size, std::int64_t patches,
                                 std::int64_t output_tokens) {
  const std::int64_t dv = v.hidden_size, q = v.num_attention_heads * v.head_dim, kv = v.num_key_value_heads * v.head_dim;
  const std::int64_t per_row = dv * q + 2 * dv * kv + q * dv + 3 * dv * v.intermediate_size;
  const std::int64_t per_layer = 2 * patches * per_row + 4 * q * patches * patches;
  return 2 * patches * (3 * v.patch_size * v.patch_size) * dv + v.num_hidden_layers * per_layer +
         2 * output_tokens * dv * text_hidden_size;
}

}  // namespace staticlm
