#include "backends/cpu/embedding_graphs.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/embedding.h"
#include "backends/cpu/kernels/rmsnorm.h"

namespace staticlm::cpu {

void run_token_embedding(const CpuTextWeights& w, std::span<const std::int64_t> ids, float* out) {
  // Upstream multiplies by the scale held in the weight dtype; this backend computes in f32.
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(w.embed_tokens.cols)));
  embedding_lookup(w.embed_tokens, ids, scale, out);
}

void run_ple_embedding(const CpuTextWeights& w, std::int64_t ple_width, std::span<const std::int64_t> ids,
                       float* out) {
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(ple_width)));
  embedding_lookup(w.embed_tokens_per_layer, ids, scale, out);
}

void run_ple_projection(const CpuTextWeights& w, std::int64_t ple_width, float eps, std::int64_t n,
                        const float* embeds, const float* token_inputs, float* out, Workspace& ws, ThreadPool* pool) {
  const std::int64_t width = w.per_layer_model_projection.rows;  // L * P
  const std::int64_t d = w.per_layer_model_projection.cols;
  const float proj_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const float sum_scale = static_cast<float>(1.0 / std::sqrt(2.0));
  float* c = Workspace::get(ws.proj, static_cast<std::size_t>(n * width));
  matmul(embeds, n, w.per_layer_model_projection, c, pool);
  for (std::int64_t i = 0; i < n * width; ++i) c[i] *= proj_scale;
  rms_norm(c, n * (width / ple_width), ple_width, w.per_layer_projection_norm.data(), eps, c);
  for (std::int64_t i = 0; i < n * width; ++i) out[i] = (c[i] + token_inputs[i]) * sum_scale;
}

void run_multimodal_fusion(std::int64_t s, std::int64_t d, std::int64_t start, std::int64_t count,
                           const float* text, const float* visual, float* out) {
  std::copy_n(text, s * d, out);
  std::copy_n(visual, count * d, out + start * d);
}

void run_lm_head(const CpuTextWeights& w, float eps, const float* hidden, float* logits, Workspace& ws,
                 ThreadPool* pool) {
  const std::int64_t d = w.embed_tokens.cols;
  float* h = Workspace::get(ws.normed, static_cast<std::size_t>(d));
  rms_norm(hidden, 1, d, w.final_norm.data(), eps, h);
  matmul(h, 1, w.embed_tokens, logits, pool);
}

}  // namespace staticlm::cpu
