// Attention kernels: a Highway row kernel (decode, few queries, several key segments), a blocked
// path for many queries over one key segment (scores and the weighted sum of values as GEMMs on
// the key range each query block's mask opens), and the scalar reference.
#include "backends/cpu/kernels/attention.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/dot.h"
#include "backends/cpu/kernels/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

#ifndef STATICLM_ATTENTION_ONCE
#define STATICLM_ATTENTION_ONCE
namespace staticlm::cpu::detail {

// One (query row, head) over every key: the reference's loop body.
inline void attend_row_reference(const float* qv, std::int64_t hd, std::span<const KvSegment> keys, std::int64_t kvh,
                                 const float* m, float scale, float* o, float* p) {
  std::int64_t col = 0, total = 0;
  float mx = -INFINITY;
  for (const KvSegment& s : keys) {
    const float* kb = s.k + kvh * s.head_stride;
    for (std::int64_t r = 0; r < s.rows; ++r, ++col) {
      p[col] = dot(qv, kb + r * hd, hd) * scale + m[col];
      mx = std::max(mx, p[col]);
    }
  }
  total = col;
  float sum = 0;
  for (std::int64_t c = 0; c < total; ++c) {
    p[c] = std::exp(p[c] - mx);
    sum += p[c];
  }
  const float inv = 1.0f / sum;
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

}  // namespace staticlm::cpu::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace staticlm::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;

// p[i] = exp(p[i] - mx) for i < n; returns the sum.
HWY_INLINE float ExpShifted(float* p, std::int64_t n, float mx) {
  const DF d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto vmx = hn::Set(d, mx);
  auto acc = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, p + i), vmx));
    hn::StoreU(e, d, p + i);
    acc = hn::Add(acc, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) {
    p[i] = std::exp(p[i] - mx);
    sum += p[i];
  }
  return sum;
}

// Heads and keys are taken four at a time: 16 dot products (or 4 heads x 4 vectors of output)
// kept in registers, each load serving four of them. A decode row otherwise spent most of its
// time waiting on one dot product's adds and horizontal sum after another.
constexpr int kTile = 4;

// s[h][j] = q[h] . k[j] over n elements.
HWY_INLINE void Scores4x4(const float* const* q, const float* const* k, std::int64_t n, float s[kTile][kTile]) {
  const DF d;
  using V = hn::Vec<DF>;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  V acc[kTile][kTile];
  for (int h = 0; h < kTile; ++h)
    for (int j = 0; j < kTile; ++j) acc[h][j] = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    V kv[kTile];
    for (int j = 0; j < kTile; ++j) kv[j] = hn::LoadU(d, k[j] + i);
    for (int h = 0; h < kTile; ++h) {
      const V qv = hn::LoadU(d, q[h] + i);
      for (int j = 0; j < kTile; ++j) acc[h][j] = hn::MulAdd(qv, kv[j], acc[h][j]);
    }
  }
  for (int h = 0; h < kTile; ++h) {
    for (int j = 0; j < kTile; ++j) {
      float tail = 0;
      for (std::int64_t e = i; e < n; ++e) tail += q[h][e] * k[j][e];
      s[h][j] = hn::GetLane(hn::SumOfLanes(d, acc[h][j])) + tail;
    }
  }
}

// o[h][c .. c + kVecs * L) = inv[h] * sum_j w[h][j] * v[j][c ..] over the n rows of v, for
// kTile heads.
template <int kVecs>
HWY_INLINE void WeightedValues(const float* const* w, const float* const* v, std::int64_t n, std::int64_t c,
                               const float* inv, float* const* o) {
  const DF d;
  using V = hn::Vec<DF>;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  V acc[kTile][kVecs];
  for (int h = 0; h < kTile; ++h)
    for (int x = 0; x < kVecs; ++x) acc[h][x] = hn::Zero(d);
  for (std::int64_t j = 0; j < n; ++j) {
    V vv[kVecs];
    for (int x = 0; x < kVecs; ++x) vv[x] = hn::LoadU(d, v[j] + c + x * L);
    for (int h = 0; h < kTile; ++h) {
      const V wv = hn::Set(d, w[h][j]);
      for (int x = 0; x < kVecs; ++x) acc[h][x] = hn::MulAdd(wv, vv[x], acc[h][x]);
    }
  }
  for (int h = 0; h < kTile; ++h) {
    const V s = hn::Set(d, inv[h]);
    for (int x = 0; x < kVecs; ++x) hn::StoreU(hn::Mul(acc[h][x], s), d, o[h] + c + x * L);
  }
}

// Heads [0, nh) of one query row that share KV head kvh (q and o: nh rows of hd), over the keys
// the mask row leaves open; false when none is open (the caller then runs the reference over
// every key). p: nh * total + 2 * nh floats.
bool AttendHeads(const float* q, std::int64_t nh, std::int64_t hd, const KvSegment* segs, std::int64_t n_segs,
                 std::int64_t kvh, const float* m, float scale, float* o, float* p, std::int64_t total) {
  const DF d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  // The open keys: their key and value rows and mask values, in key order.
  static thread_local std::vector<const float*> krow, vrow;
  static thread_local std::vector<float> kmask;
  krow.clear(), vrow.clear(), kmask.clear();
  std::int64_t col = 0;
  for (std::int64_t si = 0; si < n_segs; ++si) {
    const KvSegment& s = segs[si];
    const float* kb = s.k + kvh * s.head_stride;
    const float* vb = s.v + kvh * s.head_stride;
    for (std::int64_t r = 0; r < s.rows; ++r, ++col) {
      if (m[col] <= kNegligibleMask) continue;
      krow.push_back(kb + r * hd);
      vrow.push_back(vb + r * hd);
      kmask.push_back(m[col]);
    }
  }
  const std::int64_t kept = static_cast<std::int64_t>(krow.size());
  if (kept == 0) return false;
  float* inv = p + nh * total;
  // A tile short of heads or keys repeats its last one; the repeats' results are dropped (or,
  // for a repeated head, stored twice with the same values).
  for (std::int64_t h0 = 0; h0 < nh; h0 += kTile) {
    const std::int64_t hn_ = std::min<std::int64_t>(kTile, nh - h0);
    const float* qh[kTile];
    const float* ph[kTile];
    float* oh[kTile];
    float ih[kTile];
    for (int t = 0; t < kTile; ++t) {
      const std::int64_t h = h0 + std::min<std::int64_t>(t, hn_ - 1);
      qh[t] = q + h * hd, ph[t] = p + h * total, oh[t] = o + h * hd;
    }
    for (std::int64_t j0 = 0; j0 < kept; j0 += kTile) {
      const std::int64_t jn = std::min<std::int64_t>(kTile, kept - j0);
      const float* kj[kTile];
      for (int t = 0; t < kTile; ++t) kj[t] = krow[static_cast<std::size_t>(j0 + std::min<std::int64_t>(t, jn - 1))];
      float s[kTile][kTile];
      Scores4x4(qh, kj, hd, s);
      for (std::int64_t h = 0; h < hn_; ++h)
        for (std::int64_t j = 0; j < jn; ++j) p[(h0 + h) * total + j0 + j] = s[h][j] * scale + kmask[j0 + j];
    }
    for (std::int64_t h = 0; h < hn_; ++h) {
      float* ps = p + (h0 + h) * total;
      inv[h0 + h] = 1.0f / ExpShifted(ps, kept, *std::max_element(ps, ps + kept));
    }
    for (int t = 0; t < kTile; ++t) ih[t] = inv[h0 + std::min<std::int64_t>(t, hn_ - 1)];
    std::int64_t c = 0;
    for (; c + 4 * L <= hd; c += 4 * L) WeightedValues<4>(ph, vrow.data(), kept, c, ih, oh);
    for (; c + L <= hd; c += L) WeightedValues<1>(ph, vrow.data(), kept, c, ih, oh);
    for (; c < hd; ++c) {
      for (int t = 0; t < kTile; ++t) {
        float sum = 0;
        for (std::int64_t j = 0; j < kept; ++j) sum += ph[t][j] * vrow[static_cast<std::size_t>(j)][c];
        oh[t][c] = sum * ih[t];
      }
    }
  }
  return true;
}

// s[i] = exp(s[i] * scale + m[i] - max) for i < n; returns the sum.
float ScaleMaskExp(float* s, const float* m, std::int64_t n, float scale) {
  const DF d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto vs = hn::Set(d, scale);
  auto vmx = hn::Set(d, -INFINITY);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto v = hn::MulAdd(hn::LoadU(d, s + i), vs, hn::LoadU(d, m + i));
    hn::StoreU(v, d, s + i);
    vmx = hn::Max(vmx, v);
  }
  float mx = hn::GetLane(hn::MaxOfLanes(d, vmx));
  for (; i < n; ++i) {
    s[i] = s[i] * scale + m[i];
    mx = std::max(mx, s[i]);
  }
  return ExpShifted(s, n, mx);
}

}  // namespace staticlm::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm::cpu {

HWY_EXPORT(AttendHeads);
HWY_EXPORT(ScaleMaskExp);

namespace {

std::int64_t total_keys(std::span<const KvSegment> keys) {
  std::int64_t total = 0;
  for (const KvSegment& s : keys) total += s.rows;
  return total;
}

// Query rows per block of the blocked path.
constexpr std::int64_t kQueryBlock = 64;

void attention_rows(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys, const float* mask,
                    std::int64_t mask_stride, float scale, float* out, std::vector<float>& scratch, ThreadPool* pool) {
  const std::int64_t hd = shape.head_dim, group = shape.heads / shape.kv_heads;
  const std::int64_t total = total_keys(keys);
  const int participants = pool ? pool->size() : 1;
  // Items: (query row, KV head, chunk of the heads sharing it). A chunk reads each key and value
  // row once for all its heads; the group is cut in chunks only as far as the threads need.
  const std::int64_t rows_x_kv = shape.queries * shape.kv_heads;
  const std::int64_t parts = std::clamp<std::int64_t>((participants + rows_x_kv - 1) / rows_x_kv, 1, group);
  const std::int64_t chunk = (group + parts - 1) / parts;
  const std::int64_t per_worker = chunk * total + 2 * chunk;
  scratch.resize(static_cast<std::size_t>(per_worker * participants));
  const auto heads_kernel = HWY_DYNAMIC_DISPATCH(AttendHeads);
  parallel_for(pool, rows_x_kv * parts, 1, static_cast<double>(2 * total * hd * chunk),
               [&](std::int64_t b, std::int64_t e, int worker) {
                 float* p = scratch.data() + static_cast<std::int64_t>(worker) * per_worker;
                 for (std::int64_t item = b; item < e; ++item) {
                   const std::int64_t i = item / (shape.kv_heads * parts);
                   const std::int64_t kvh = item / parts % shape.kv_heads;
                   const std::int64_t h0 = kvh * group + item % parts * chunk;
                   const std::int64_t nh = std::min(chunk, (kvh + 1) * group - h0);
                   if (nh <= 0) continue;
                   const float* m = mask + i * mask_stride;
                   const float* qv = q + (i * shape.heads + h0) * hd;
                   float* o = out + (i * shape.heads + h0) * hd;
                   if (!heads_kernel(qv, nh, hd, keys.data(), static_cast<std::int64_t>(keys.size()), kvh, m, scale, o,
                                     p, total)) {
                     for (std::int64_t h = 0; h < nh; ++h) {
                       detail::attend_row_reference(qv + h * hd, hd, keys, kvh, m, scale, o + h * hd, p);
                     }
                   }
                 }
               });
}

// Many queries, one key segment: per (head, query block), scores = Q K[lo:hi]^T and
// out = P V[lo:hi] as GEMMs, where [lo, hi) spans the keys the block's mask rows leave open.
void attention_blocked(const float* q, const AttentionShape& shape, const KvSegment& seg, const float* mask,
                       std::int64_t mask_stride, float scale, float* out, std::vector<float>& scratch,
                       ThreadPool* pool) {
  const std::int64_t hd = shape.head_dim, heads = shape.heads, group = heads / shape.kv_heads;
  const std::int64_t nk = seg.rows, ldq = heads * hd;
  // V^T of every KV head, [kv_heads, hd, nk]: the GEMM's weight layout for P V.
  scratch.resize(static_cast<std::size_t>(shape.kv_heads * hd * nk));
  float* vt = scratch.data();
  for (std::int64_t h = 0; h < shape.kv_heads; ++h) {
    const float* v = seg.v + h * seg.head_stride;
    float* t = vt + h * hd * nk;
    for (std::int64_t r = 0; r < nk; ++r)
      for (std::int64_t dd = 0; dd < hd; ++dd) t[dd * nk + r] = v[r * hd + dd];
  }
  const std::int64_t blocks = (shape.queries + kQueryBlock - 1) / kQueryBlock;
  const auto scale_mask_exp = HWY_DYNAMIC_DISPATCH(ScaleMaskExp);
  parallel_for(pool, heads * blocks, 1, static_cast<double>(4 * kQueryBlock * nk * hd),
               [&](std::int64_t b, std::int64_t e, int) {
                 static thread_local std::vector<float> scores, row_scratch;
                 scores.resize(static_cast<std::size_t>(kQueryBlock * nk));
                 for (std::int64_t item = b; item < e; ++item) {
                   const std::int64_t h = item / blocks, kvh = h / group;
                   const std::int64_t i0 = (item % blocks) * kQueryBlock;
                   const std::int64_t rows = std::min(kQueryBlock, shape.queries - i0);
                   // The key range the block's rows open; rows with nothing open take the reference.
                   std::int64_t lo = nk, hi = 0;
                   bool closed_row = false;
                   for (std::int64_t r = 0; r < rows; ++r) {
                     const float* m = mask + (i0 + r) * mask_stride;
                     std::int64_t a = 0, z = nk;
                     while (a < nk && m[a] <= kNegligibleMask) ++a;
                     while (z > a && m[z - 1] <= kNegligibleMask) --z;
                     if (a == z) {
                       closed_row = true;
                       continue;
                     }
                     lo = std::min(lo, a);
                     hi = std::max(hi, z);
                   }
                   const std::int64_t len = hi - lo;
                   if (len > 0) {
                     const float* qb = q + i0 * ldq + h * hd;
                     float* ob = out + i0 * ldq + h * hd;
                     const GemmArgs qk{qb, ldq, rows, hd, seg.k + kvh * seg.head_stride + lo * hd, DType::kF32, hd,
                                       scores.data(), len};
                     gemm_f32(qk, 0, len);
                     float inv[kQueryBlock];
                     for (std::int64_t r = 0; r < rows; ++r) {
                       inv[r] = 1.0f / scale_mask_exp(scores.data() + r * len, mask + (i0 + r) * mask_stride + lo, len,
                                                      scale);
                     }
                     const GemmArgs pv{scores.data(), len, rows, len, vt + kvh * hd * nk + lo, DType::kF32, nk, ob, ldq};
                     gemm_f32(pv, 0, hd);
                     for (std::int64_t r = 0; r < rows; ++r)
                       for (std::int64_t dd = 0; dd < hd; ++dd) ob[r * ldq + dd] *= inv[r];
                   }
                   if (closed_row || len <= 0) {
                     row_scratch.resize(static_cast<std::size_t>(nk));
                     for (std::int64_t r = 0; r < rows; ++r) {
                       const float* m = mask + (i0 + r) * mask_stride;
                       std::int64_t a = 0;
                       while (a < nk && m[a] <= kNegligibleMask) ++a;
                       if (a < nk && len > 0) continue;
                       detail::attend_row_reference(q + (i0 + r) * ldq + h * hd, hd, std::span(&seg, 1), kvh, m, scale,
                                                    out + (i0 + r) * ldq + h * hd, row_scratch.data());
                     }
                   }
                 }
               });
}

}  // namespace

void attention_reference(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys,
                         const float* mask, std::int64_t mask_stride, float scale, float* out,
                         std::vector<float>& scratch, ThreadPool* pool) {
  const std::int64_t hd = shape.head_dim, group = shape.heads / shape.kv_heads;
  const std::int64_t total = total_keys(keys);
  const int participants = pool ? pool->size() : 1;
  scratch.resize(static_cast<std::size_t>(total * participants));
  parallel_for(pool, shape.queries * shape.heads, 1, static_cast<double>(2 * total * hd),
               [&](std::int64_t b, std::int64_t e, int worker) {
                 float* p = scratch.data() + static_cast<std::int64_t>(worker) * total;
                 for (std::int64_t item = b; item < e; ++item) {
                   const std::int64_t i = item / shape.heads, h = item % shape.heads;
                   detail::attend_row_reference(q + (i * shape.heads + h) * hd, hd, keys, h / group,
                                                mask + i * mask_stride, scale, out + (i * shape.heads + h) * hd, p);
                 }
               });
}

void attention(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys, const float* mask,
               std::int64_t mask_stride, float scale, float* out, std::vector<float>& scratch, ThreadPool* pool) {
  if (scalar_kernels()) return attention_reference(q, shape, keys, mask, mask_stride, scale, out, scratch, pool);
  if (shape.queries >= 8 && keys.size() == 1) {
    return attention_blocked(q, shape, keys[0], mask, mask_stride, scale, out, scratch, pool);
  }
  attention_rows(q, shape, keys, mask, mask_stride, scale, out, scratch, pool);
}

}  // namespace staticlm::cpu
#endif
