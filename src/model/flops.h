// Floating-point operations of a prefill and of an image encode, counted from the config: the
// work the model asks for (2 flops per multiply-add), not what a kernel happens to execute, so
// a measured GFLOP/s can be held against the machine's FMA peak. Elementwise work (norms, RoPE,
// activations, softmax, residual adds, pooling) is left out: it is a few flops per element
// against the hundreds to thousands per element of the matmuls.
//
// prefill_flops(config, layers, n), n prompt rows, D = hidden_size, P = PLE width, L = layers:
//   2 n [ sum over layers of ( D q_width + [owners: 2 D kv_width] + q_width D      attention linears
//                             + 3 D F                                              gate, up, down
//                             + [P > 0: 2 D P] ) ]                                 PLE gate, projection
// + sum over layers of 4 heads head_dim pairs(layer)                               QK^T and PV
// + [P > 0: 2 n D (L P)]                                                           per_layer_model_projection
// + 2 V D                                                                          LM head, one row
// where pairs is the number of (query, key) pairs the mask allows among n rows: n(n+1)/2 for a
// full (causal) layer; with a sliding window w (key k allowed for query q when q-w < k <= q),
// sum over q of min(q+1, w). F is the layer's intermediate_size (doubled on double-wide layers).
//
// vision_encode_flops(vision, text_hidden, patches, tokens), Dv = vision hidden, Fv its MLP:
//   2 patches (3 p^2) Dv                                                           input_proj
// + layers x [ 2 patches ( Dv H hd + 2 Dv Hkv hd + H hd Dv + 3 Dv Fv )              linears
//            + 4 H hd patches^2 ]                                                   bidirectional attention
// + 2 tokens Dv D                                                                  embedding_projection
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"
#include "model/layer_table.h"

namespace staticlm {

// (query, key) pairs a causal mask allows among n rows; with a sliding window when given.
std::int64_t causal_attention_pairs(std::int64_t n, std::int64_t sliding_window, bool sliding);

// Flops of prefilling n tokens (the LM head once, for the last token).
std::int64_t prefill_flops(const ModelConfig& config, const std::vector<LayerInfo>& layers, std::int64_t n_tokens);

// Flops of prefilling n tokens after `past` cached ones (the rows past..past+n-1 attending to
// the cache and to each other; the LM head once): prefill_flops(past + n) less that of `past`
// rows, whose LM head it adds back.
std::int64_t append_flops(const ModelConfig& config, const std::vector<LayerInfo>& layers, std::int64_t past,
                          std::int64_t n_tokens);

// Flops of one vision_prefill over `patches` patch rows (all attending to all) pooled to
// `output_tokens` soft tokens of text width `text_hidden_size`.
std::int64_t vision_encode_flops(const VisionConfig& vision, std::int64_t text_hidden_size, std::int64_t patches,
                                 std::int64_t output_tokens);

}  // namespace staticlm
