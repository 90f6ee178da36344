// Attention kernels: a Highway row kernel (decode, few queries, several key segments), a blocked
// path for many queries over one key segment (scores and the weighted sum of values as GEMMs on
// the key range each query block's mask opens), and the scalar reference.
#include "backends/cpu/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/dot.h"
#include "backends/cpu/kernels/gemm.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/kernels/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/cache_control.h"
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
// `next`: the key rows of the following tile, prefetched at the same offsets (a decode step's
// cache rows come from memory).
HWY_INLINE void Scores4x4(const float* const* q, const float* const* k, const float* const* next, std::int64_t n,
                          float s[kTile][kTile]) {
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
    for (int j = 0; j < kTile; ++j) hwy::Prefetch(next[j] + i);
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

// Prefetch distances in keys (a decode step's cache rows come from memory): the value rows 16
// keys ahead, the key rows of the tile 8 keys ahead.
constexpr std::int64_t kValuesAhead = 16;
constexpr std::int64_t kKeysAhead = 8;

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
    // The value rows come from memory too; each column block walks all of them.
    const float* ahead = v[std::min<std::int64_t>(j + kValuesAhead, n - 1)] + c;
    for (int x = 0; x < kVecs; ++x) hwy::Prefetch(ahead + x * L);
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

// Heads [0, nh) of one query row over n keys given as rows (krow, vrow: hd floats each) with
// their mask values. p: nh * p_stride scores plus nh floats. With `normalize`, o = softmax(scores)
// times the values; otherwise o holds the weighted sum before the division and mx / sum each
// head's largest score and sum of exp(score - mx), for the caller to merge with other key ranges.
void AttendKeys(const float* q, std::int64_t nh, std::int64_t hd, const float* const* krow, const float* const* vrow,
                const float* kmask, std::int64_t n, float scale, float* o, float* p, std::int64_t p_stride,
                bool normalize, float* mx, float* sum) {
  const DF d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  float* inv = p + nh * p_stride;
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
      qh[t] = q + h * hd, ph[t] = p + h * p_stride, oh[t] = o + h * hd;
    }
    for (std::int64_t j0 = 0; j0 < n; j0 += kTile) {
      const std::int64_t jn = std::min<std::int64_t>(kTile, n - j0);
      const float* kj[kTile];
      for (int t = 0; t < kTile; ++t) kj[t] = krow[j0 + std::min<std::int64_t>(t, jn - 1)];
      const float* kn[kTile];
      for (int t = 0; t < kTile; ++t) kn[t] = krow[std::min<std::int64_t>(j0 + kKeysAhead + t, n - 1)];
      float s[kTile][kTile];
      Scores4x4(qh, kj, kn, hd, s);
      for (std::int64_t h = 0; h < hn_; ++h)
        for (std::int64_t j = 0; j < jn; ++j) p[(h0 + h) * p_stride + j0 + j] = s[h][j] * scale + kmask[j0 + j];
    }
    for (std::int64_t h = 0; h < hn_; ++h) {
      float* ps = p + (h0 + h) * p_stride;
      const float top = *std::max_element(ps, ps + n);
      const float total = ExpShifted(ps, n, top);
      inv[h0 + h] = normalize ? 1.0f / total : 1.0f;
      if (!normalize) mx[h0 + h] = top, sum[h0 + h] = total;
    }
    for (int t = 0; t < kTile; ++t) ih[t] = inv[h0 + std::min<std::int64_t>(t, hn_ - 1)];
    std::int64_t c = 0;
    for (; c + 4 * L <= hd; c += 4 * L) WeightedValues<4>(ph, vrow, n, c, ih, oh);
    for (; c + L <= hd; c += L) WeightedValues<1>(ph, vrow, n, c, ih, oh);
    for (; c < hd; ++c) {
      for (int t = 0; t < kTile; ++t) {
        float acc = 0;
        for (std::int64_t j = 0; j < n; ++j) acc += ph[t][j] * vrow[j][c];
        oh[t][c] = acc * ih[t];
      }
    }
  }
}

// out[0, hd) = sum over parts of c[part] * o[part * part_stride + (0, hd)]: the merge of one
// head's key ranges (c: each range's weight, exp(its max - the overall max) / the overall sum).
void MergeKeyRanges(const float* o, std::int64_t part_stride, const float* c, std::int64_t parts, std::int64_t hd,
                    float* out) {
  const DF d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + L <= hd; i += L) {
    auto acc = hn::Zero(d);
    for (std::int64_t t = 0; t < parts; ++t) acc = hn::MulAdd(hn::Set(d, c[t]), hn::LoadU(d, o + t * part_stride + i), acc);
    hn::StoreU(acc, d, out + i);
  }
  for (; i < hd; ++i) {
    float acc = 0;
    for (std::int64_t t = 0; t < parts; ++t) acc += c[t] * o[t * part_stride + i];
    out[i] = acc;
  }
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

HWY_EXPORT(AttendKeys);
HWY_EXPORT(MergeKeyRanges);
HWY_EXPORT(ScaleMaskExp);

namespace {

std::int64_t total_keys(std::span<const KvSegment> keys) {
  std::int64_t total = 0;
  for (const KvSegment& s : keys) total += s.rows;
  return total;
}

// Query rows per block of the blocked path.
constexpr std::int64_t kQueryBlock = 64;

// The keys a mask row leaves open (above kNegligibleMask) for KV head kvh: their key and value
// rows and mask values, in key order.
struct OpenKeys {
  std::vector<const float*> k, v;
  std::vector<float> m;

  void collect(std::span<const KvSegment> keys, std::int64_t kvh, std::int64_t hd, const float* mask) {
    k.clear(), v.clear(), m.clear();
    std::int64_t col = 0;
    for (const KvSegment& s : keys) {
      const float* kb = s.k + kvh * s.head_stride;
      const float* vb = s.v + kvh * s.head_stride;
      for (std::int64_t r = 0; r < s.rows; ++r, ++col) {
        if (mask[col] <= kNegligibleMask) continue;
        k.push_back(kb + r * hd);
        v.push_back(vb + r * hd);
        m.push_back(mask[col]);
      }
    }
  }
  std::int64_t size() const { return static_cast<std::int64_t>(k.size()); }
};

// A decode row's keys are cut in ranges only when it has this many key floats open (open keys
// x head_dim): the threads then exchange the query and the partial outputs, about 5 us on the
// 2-vCPU VM, which one thread takes to read 80 cold keys of 256 (BM_AttentionDecode/*/2/256/128).
constexpr std::int64_t kSplitMinFloats = 80 * 256;
// How many ranges: a constant, not the thread count, so that every --threads (and no pool)
// computes the same ranges and merges them in the same order: the CPU backend's results do not
// depend on the thread count (docs/record-replay.md).
constexpr std::int64_t kKeyRanges = 2;

// Items: (query row, KV head) pairs, each reading its key and value rows once for all the
// heads that share them. A single pair (a decode row: one query, E2B's one KV head) with many
// open keys is cut in kKeyRanges ranges instead, computed in parallel and merged as in flash
// decoding: each thread then streams part of the cache, not all of it (a decode step's cache
// comes from memory; cut by heads, both threads read every key and value row).
void attention_rows(const float* q, const AttentionShape& shape, std::span<const KvSegment> keys, const float* mask,
                    std::int64_t mask_stride, float scale, float* out, std::vector<float>& scratch, ThreadPool* pool) {
  const std::int64_t hd = shape.head_dim, group = shape.heads / shape.kv_heads;
  const std::int64_t total = total_keys(keys);
  const int participants = pool ? pool->size() : 1;
  const std::int64_t pairs = shape.queries * shape.kv_heads;
  if (pairs <= 0) return;
  const auto kernel = HWY_DYNAMIC_DISPATCH(AttendKeys);
  // One pair whole over its open keys, or, when its mask opens none, the reference over every
  // key. p: per_worker floats.
  const std::int64_t per_worker = group * total + group;
  const auto whole = [&](std::int64_t pair, const OpenKeys& open, float* p) {
    const std::int64_t i = pair / shape.kv_heads, kvh = pair % shape.kv_heads, h0 = kvh * group;
    if (open.size() == 0) {
      for (std::int64_t h = h0; h < h0 + group; ++h) {
        detail::attend_row_reference(q + (i * shape.heads + h) * hd, hd, keys, kvh, mask + i * mask_stride, scale,
                                     out + (i * shape.heads + h) * hd, p);
      }
      return;
    }
    kernel(q + (i * shape.heads + h0) * hd, group, hd, open.k.data(), open.v.data(), open.m.data(), open.size(), scale,
           out + (i * shape.heads + h0) * hd, p, total, true, nullptr, nullptr);
  };
  if (pairs > 1) {
    scratch.resize(static_cast<std::size_t>(per_worker * participants));
    parallel_for(pool, pairs, 1, static_cast<double>(2 * total * hd * group), [&](std::int64_t b, std::int64_t e, int worker) {
      static thread_local OpenKeys open;
      for (std::int64_t pair = b; pair < e; ++pair) {
        open.collect(keys, pair % shape.kv_heads, hd, mask + pair / shape.kv_heads * mask_stride);
        whole(pair, open, scratch.data() + static_cast<std::int64_t>(worker) * per_worker);
      }
    });
    return;
  }
  // One pair (query 0, KV head 0). Its lists are the caller's, read by every worker (a
  // thread_local named in the loop body would be the worker's own).
  static thread_local OpenKeys open_of_caller;
  const OpenKeys& o = open_of_caller;
  open_of_caller.collect(keys, 0, hd, mask);
  if (o.size() < kKeyRanges || o.size() * hd < kSplitMinFloats) {  // few keys: one thread, the hand-off would cost more
    scratch.resize(static_cast<std::size_t>(per_worker));
    whole(0, o, scratch.data());
    return;
  }
  // Per range: the unnormalised outputs, then each head's max and sum; then per worker the
  // scores.
  const std::int64_t part = group * hd + 2 * group;
  scratch.resize(static_cast<std::size_t>(kKeyRanges * part + per_worker * participants));
  float* partial = scratch.data();
  float* work = partial + kKeyRanges * part;
  parallel_for(pool, kKeyRanges, 1, static_cast<double>(2 * (o.size() / kKeyRanges + 1) * hd * group),
               [&](std::int64_t b, std::int64_t e, int worker) {
                 float* p = work + static_cast<std::int64_t>(worker) * per_worker;
                 for (std::int64_t r = b; r < e; ++r) {
                   const std::int64_t j0 = o.size() * r / kKeyRanges, j1 = o.size() * (r + 1) / kKeyRanges;
                   float* po = partial + r * part;  // j0 < j1: at least one key a range
                   kernel(q, group, hd, o.k.data() + j0, o.v.data() + j0, o.m.data() + j0, j1 - j0, scale, po, p,
                          j1 - j0, false, po + group * hd, po + group * hd + group);
                 }
               });
  const auto merge = HWY_DYNAMIC_DISPATCH(MergeKeyRanges);
  float c[kKeyRanges];
  for (std::int64_t h = 0; h < group; ++h) {
    float top = -INFINITY;
    for (std::int64_t r = 0; r < kKeyRanges; ++r) top = std::max(top, partial[r * part + group * hd + h]);
    double total_sum = 0;
    for (std::int64_t r = 0; r < kKeyRanges; ++r) {
      const float mx = partial[r * part + group * hd + h];
      c[r] = std::exp(mx - top);
      total_sum += static_cast<double>(c[r]) * partial[r * part + group * hd + group + h];
    }
    for (float& x : c) x = static_cast<float>(x / total_sum);
    merge(partial + h * hd, part, c, kKeyRanges, hd, out + h * hd);
  }
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
