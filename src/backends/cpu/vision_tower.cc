#include "backends/cpu/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/kernels/position_pool.h"
#include "backends/cpu/kernels/rmsnorm.h"
#include "backends/cpu/kernels/rope2d.h"
#include "backends/cpu/residual.h"
#include "base/error.h"

namespace staticlm::cpu {

namespace {

float* grow(std::vector<float>& b, std::int64_t n) {
  if (static_cast<std::int64_t>(b.size()) < n) b.resize(static_cast<std::size_t>(n));
  return b.data();
}

bool is_padding(const std::int64_t* pos, std::int64_t r) { return pos[r * 2] == -1 && pos[r * 2 + 1] == -1; }

// [n, heads, hd] -> [heads, n, hd], the layout the attention kernel reads keys and values in.
void to_head_major(const float* src, std::int64_t n, std::int64_t heads, std::int64_t hd, float* dst) {
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t h = 0; h < heads; ++h) std::copy_n(src + (r * heads + h) * hd, hd, dst + (h * n + r) * hd);
}

// One Gemma4VisionEncoderLayer over x [n, Dv], in place.
void encoder_layer(const CpuVisionLayerWeights& w, const VisionConfig& c, std::int64_t n, float* x, VisionScratch& s,
                   ThreadPool* pool) {
  const std::int64_t dv = c.hidden_size, hd = c.head_dim, heads = c.num_attention_heads;
  const std::int64_t kv_heads = c.num_key_value_heads, inter = c.intermediate_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  float* a = grow(s.normed, n * dv);
  rms_norm(x, n, dv, w.input_norm.data(), eps, a);
  float* q = grow(s.q, n * heads * hd);
  float* k = grow(s.k, n * kv_heads * hd);
  float* v = grow(s.v, n * kv_heads * hd);
  clipped_linear(w.q_proj, a, n, q, s.clipped, pool);
  clipped_linear(w.k_proj, a, n, k, s.clipped, pool);
  clipped_linear(w.v_proj, a, n, v, s.clipped, pool);
  rms_norm(q, n * heads, hd, w.q_norm.data(), eps, q);
  rms_norm(k, n * kv_heads, hd, w.k_norm.data(), eps, k);
  rms_norm(v, n * kv_heads, hd, nullptr, eps, v);  // the v norm has no weight
  apply_rope2d(q, n, heads, hd, s.cos.data(), s.sin.data());
  apply_rope2d(k, n, kv_heads, hd, s.cos.data(), s.sin.data());
  float* kh = grow(s.kh, n * kv_heads * hd);
  float* vh = grow(s.vh, n * kv_heads * hd);
  to_head_major(k, n, kv_heads, hd, kh);
  to_head_major(v, n, kv_heads, hd, vh);
  const KvSegment seg{kh, vh, n, n * hd};
  float* attn = grow(s.attn, n * heads * hd);
  // Bidirectional, scale 1.0 (q and k are RMS-normed); one key-padding mask row for every query.
  attention(q, {n, heads, kv_heads, hd}, std::span(&seg, 1), s.key_mask.data(), 0, 1.0f, attn, s.scores, pool);
  float* o = grow(s.proj, n * dv);
  clipped_linear(w.o_proj, attn, n, o, s.clipped, pool);
  rms_norm(o, n, dv, w.post_attention_norm.data(), eps, o);
  add_into(x, o, n * dv);

  rms_norm(x, n, dv, w.pre_feedforward_norm.data(), eps, a);
  float* g = grow(s.gate, n * inter);
  float* u = grow(s.up, n * inter);
  clipped_linear(w.gate_proj, a, n, g, s.clipped, pool);
  clipped_linear(w.up_proj, a, n, u, s.clipped, pool);
  gelu_tanh_mul(g, u, n * inter);
  clipped_linear(w.down_proj, g, n, o, s.clipped, pool);
  rms_norm(o, n, dv, w.post_feedforward_norm.data(), eps, o);
  add_into(x, o, n * dv);
}

}  // namespace

void clipped_linear(const ClippedLinear& w, const float* x, std::int64_t n, float* y, std::vector<float>& clipped,
                    ThreadPool* pool) {
  const std::int64_t in = w.w.cols, out = w.w.rows;
  float* c = grow(clipped, n * in);
  for (std::int64_t i = 0; i < n * in; ++i) c[i] = std::clamp(x[i], w.input_min, w.input_max);
  matmul(c, n, w.w, y, pool);
  for (std::int64_t i = 0; i < n * out; ++i) y[i] = std::clamp(y[i], w.output_min, w.output_max);
}

std::int64_t run_vision_tower(const CpuVisionWeights& w, const VisionConfig& c, const float* pixels,
                              const std::int64_t* positions, std::int64_t n, float* out, std::int64_t max_tokens,
                              VisionScratch& s, ThreadPool* pool, const VisionLayerTap* tap) {
  const std::int64_t dv = c.hidden_size, pv = w.input_proj.cols, hd = c.head_dim;
  const std::int64_t table = c.position_embedding_size;
  std::int64_t valid = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    if (is_padding(positions, r)) continue;
    ++valid;
    for (int axis = 0; axis < 2; ++axis) {
      const std::int64_t p = positions[r * 2 + axis];
      if (p < 0 || p >= table) {
        invalid_argument("vision tower: patch " + std::to_string(r) + " has " + (axis == 0 ? "x" : "y") + " position " +
                         std::to_string(p) + ", expected [0, " + std::to_string(table) +
                         ") (position_embedding_size), or (-1, -1) for padding");
      }
    }
  }
  if (valid == 0) invalid_argument("vision tower: all " + std::to_string(n) + " patches are padding");

  // Patch embedder: input_proj(2 (pixels - 0.5)) + T[0][x] + T[1][y] (zero for padding).
  float* scaled = grow(s.clipped, n * pv);
  for (std::int64_t i = 0; i < n * pv; ++i) scaled[i] = 2.0f * (pixels[i] - 0.5f);
  float* x = grow(s.x, n * dv);
  matmul(scaled, n, w.input_proj, x, pool);
  float* row = grow(s.proj, 2 * dv);
  for (std::int64_t r = 0; r < n; ++r) {
    if (is_padding(positions, r)) continue;
    weight_row_f32(w.position_table, positions[r * 2], row);
    weight_row_f32(w.position_table, table + positions[r * 2 + 1], row + dv);
    for (std::int64_t j = 0; j < dv; ++j) x[r * dv + j] += row[j] + row[dv + j];
  }

  // Host-side constants of the encoder: 2-D RoPE tables and the key-padding mask.
  grow(s.cos, n * hd);
  grow(s.sin, n * hd);
  build_rope2d_tables(positions, n, hd, c.rope_parameters.rope_theta, s.cos.data(), s.sin.data());
  float* mask = grow(s.key_mask, n);
  for (std::int64_t r = 0; r < n; ++r) mask[r] = is_padding(positions, r) ? -INFINITY : 0.0f;

  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    encoder_layer(w.layers[i], c, n, x, s, pool);
    if (tap != nullptr && *tap) (*tap)(static_cast<int>(i), x, n, dv);
  }

  // Pooler: padding rows zeroed (the pool skips them), k x k average, x sqrt(Dv).
  const std::int64_t k = c.pooling_kernel_size;
  float* pooled = grow(s.pooled, max_tokens * dv);
  const std::int64_t tokens = pool_by_positions(x, positions, n, dv, k, pooled, max_tokens, s.pool_sums);
  const float root = static_cast<float>(std::sqrt(static_cast<double>(dv)));
  for (std::int64_t i = 0; i < tokens * dv; ++i) pooled[i] *= root;

  // Gemma4MultimodalEmbedder: weightless RMSNorm, then Dv -> D (no sqrt(D) scaling).
  rms_norm(pooled, tokens, dv, nullptr, static_cast<float>(c.rms_norm_eps), pooled);
  matmul(pooled, tokens, w.embedding_projection, out, pool);
  return tokens;
}

}  // namespace staticlm::cpu
