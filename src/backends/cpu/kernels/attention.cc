#include "backends/cpu/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include "backends/cpu/kernels/dot.h"

namespace staticlm::cpu {

void attention(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys, const float* mask,
               std::int64_t mask_stride, float scale, float* out, std::vector<float>& scratch, ThreadPool* pool) {
  const std::int64_t hd = shape.head_dim, group = shape.heads / shape.kv_heads;
  std::int64_t total = 0;
  for (const KvSegment& s : keys) total += s.rows;
  const int participants = pool ? pool->size() : 1;
  scratch.resize(static_cast<std::size_t>(total * participants));
  // One item per (query row, head); each participant keeps its scores in its own scratch row.
  const std::int64_t items = shape.queries * shape.heads;
  parallel_for(pool, items, 1, static_cast<double>(2 * total * hd), [&](std::int64_t b, std::int64_t e, int worker) {
    float* p = scratch.data() + static_cast<std::int64_t>(worker) * total;
    for (std::int64_t item = b; item < e; ++item) {
      const std::int64_t i = item / shape.heads, h = item % shape.heads, kvh = h / group;
      const float* m = mask + i * mask_stride;
      const float* qv = q + (i * shape.heads + h) * hd;
      // Scores, then a max-subtracted softmax.
      std::int64_t col = 0;
      float mx = -INFINITY;
      for (const KvSegment& s : keys) {
        const float* kb = s.k + kvh * s.head_stride;
        for (std::int64_t r = 0; r < s.rows; ++r, ++col) {
          p[col] = dot(qv, kb + r * hd, hd) * scale + m[col];
          mx = std::max(mx, p[col]);
        }
      }
      float sum = 0;
      for (std::int64_t c = 0; c < total; ++c) {
        p[c] = std::exp(p[c] - mx);
        sum += p[c];
      }
      const float inv = 1.0f / sum;
      float* o = out + (i * shape.heads + h) * hd;
      std::fill(o, o + hd, 0.0f);
      col = 0;
      for (const KvSegment& s : keys) {
        const float* vb = s.v + kvh * s.head_stride;
        for (std::int64_t r = 0; r < s.rows; ++r, ++col) {
          const float w = p[col] * inv;
          const float* vr = vb + r * hd;
          for (std::int64_t d = 0; d < hd; ++d) o[d] += w * vr[d];
        }
      }
    }
  });
}

}  // namespace staticlm::cpu
