#include "backends/cpu/decoder_layer.h"

#include <algorithm>

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/kernels/rmsnorm.h"
#include "backends/cpu/kernels/rope_apply.h"
#include "backends/cpu/residual.h"

namespace staticlm::cpu {

std::int64_t active_query_rows(const float* mask, std::int64_t rows, std::int64_t stride, std::int64_t first_own_key) {
  std::int64_t n = rows;
  while (n > 0 && mask[(n - 1) * stride + first_own_key + (n - 1)] <= kNegligibleMask) --n;
  if (n == rows) return rows;
  for (std::int64_t q = 0; q < n; ++q) {
    for (std::int64_t k = first_own_key + n; k < first_own_key + rows; ++k) {
      if (mask[q * stride + k] > kNegligibleMask) return rows;  // a kept row reads a dropped key
    }
  }
  return n;
}

std::int64_t active_prefill_rows(const float* mask, std::int64_t s) { return active_query_rows(mask, s, s, 0); }

namespace {

// [n, heads, hd] (token-major, as projections produce) -> [heads, stride_rows, hd] rows 0..n-1.
void to_head_major(const float* src, std::int64_t n, std::int64_t heads, std::int64_t hd, std::int64_t stride_rows,
                   float* dst) {
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t h = 0; h < heads; ++h)
      std::copy_n(src + (r * heads + h) * hd, hd, dst + (h * stride_rows + r) * hd);
}

}  // namespace

void run_decoder_layer(const LayerInfo& layer, const CpuLayerWeights& w, std::int64_t hidden_size,
                       std::int64_t ple_width, const DecoderLayerOptions& options, const DecoderLayerCall& call,
                       Workspace& ws) {
  const std::int64_t d = hidden_size, s = call.max_seq;
  const std::int64_t heads = layer.num_heads, kv_heads = layer.num_kv_heads, hd = layer.head_dim;
  const std::int64_t rows = call.decode ? 1 : call.append > 0 ? call.append : s;  // rows of the signature
  const std::int64_t n = call.decode || !options.skip_padded_rows ? rows
                         : call.append > 0                        ? active_query_rows(call.mask, rows, s, s - rows)
                                                                  : active_prefill_rows(call.mask, s);
  const float eps = options.rms_norm_eps;

  // Skipped rows (padding) produce zeros.
  std::fill(call.hidden_out + n * d, call.hidden_out + rows * d, 0.0f);
  if (layer.owns_kv) {
    std::fill(call.new_k, call.new_k + kv_heads * rows * hd, 0.0f);
    std::fill(call.new_v, call.new_v + kv_heads * rows * hd, 0.0f);
  }
  if (n == 0) return;

  // Attention block.
  float* normed = Workspace::get(ws.normed, static_cast<std::size_t>(n * d));
  rms_norm(call.hidden, n, d, w.input_norm.data(), eps, normed);
  float* q = Workspace::get(ws.q, static_cast<std::size_t>(n * heads * hd));
  float* k = layer.owns_kv ? Workspace::get(ws.k, static_cast<std::size_t>(n * kv_heads * hd)) : nullptr;
  float* v = layer.owns_kv ? Workspace::get(ws.v, static_cast<std::size_t>(n * kv_heads * hd)) : nullptr;
  // q, k and v read the same normed input: one parallel loop for decode.
  const MatmulOut qkv[] = {{&w.q_proj, q}, {&w.k_proj, k}, {&w.v_proj, v}};
  matmul_same_input(normed, n, std::span(qkv, layer.owns_kv ? 3 : 1), options.pool);
  rms_norm(q, n * heads, hd, w.q_norm.data(), eps, q);
  apply_rope(q, n, heads, hd, call.cos, call.sin, options.rope_sine);

  KvSegment segments[2];
  std::size_t n_segments = 1;
  if (layer.owns_kv) {
    rms_norm(k, n * kv_heads, hd, w.k_norm.data(), eps, k);
    apply_rope(k, n, kv_heads, hd, call.cos, call.sin, options.rope_sine);
    rms_norm(v, n * kv_heads, hd, nullptr, eps, v);  // v_norm has no weight
    to_head_major(k, n, kv_heads, hd, rows, call.new_k);
    to_head_major(v, n, kv_heads, hd, rows, call.new_v);
    if (call.decode || call.append > 0) {
      // K axis = [past slots 0..S-rows-1 | the new rows at S-rows..S-1] (decode: rows = 1).
      segments[0] = {call.kv_k, call.kv_v, s - rows, (s - rows) * hd};
      segments[1] = {call.new_k, call.new_v, rows, rows * hd};
      n_segments = 2;
    } else {
      segments[0] = {call.new_k, call.new_v, n, rows * hd};
    }
  } else {
    // Shared K/V from the donor layer: prefill its S rows, decode / append cat(past, new rows).
    segments[0] = {call.kv_k, call.kv_v, call.decode || call.append > 0 ? s : n, s * hd};
  }
  float* attn = Workspace::get(ws.attn, static_cast<std::size_t>(n * heads * hd));
  attention(q, {n, heads, kv_heads, hd}, std::span(segments, n_segments), call.mask, s, 1.0f, attn, ws.scores,
            options.pool);

  float* out = call.hidden_out;
  float* proj = Workspace::get(ws.proj, static_cast<std::size_t>(n * d));
  matmul(attn, n, w.o_proj, proj, options.pool);
  rms_norm(proj, n, d, w.post_attention_norm.data(), eps, proj);
  for (std::int64_t i = 0; i < n * d; ++i) out[i] = call.hidden[i] + proj[i];

  // MLP block.
  const std::int64_t f = layer.intermediate_size;
  rms_norm(out, n, d, w.pre_feedforward_norm.data(), eps, normed);
  float* gate = Workspace::get(ws.gate, static_cast<std::size_t>(n * f));
  float* up = Workspace::get(ws.up, static_cast<std::size_t>(n * f));
  matmul_gate_up_gelu(normed, n, w.gate_proj, w.up_proj, gate, up, options.pool);
  matmul(gate, n, w.down_proj, proj, options.pool);
  rms_norm(proj, n, d, w.post_feedforward_norm.data(), eps, proj);
  add_into(out, proj, n * d);

  // Per-layer input injection.
  if (ple_width > 0) {
    float* g = Workspace::get(ws.gate, static_cast<std::size_t>(n * ple_width));
    matmul(out, n, w.ple_gate, g, options.pool);
    gelu_tanh_mul(g, call.per_layer_input, n * ple_width);
    matmul(g, n, w.ple_projection, proj, options.pool);
    rms_norm(proj, n, d, w.post_ple_norm.data(), eps, proj);
    add_into(out, proj, n * d);
  }
  for (std::int64_t i = 0; i < n * d; ++i) out[i] *= w.layer_scalar;
}

}  // namespace staticlm::cpu
