#include "backends/cpu/kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace staticlm::cpu {
namespace {

float val(int i, int salt) { return static_cast<float>(std::sin(0.37 * i + salt)); }

// A direct double-precision reference: full softmax over all keys of one contiguous buffer.
std::vector<double> reference(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<float>& mask, int nq, int heads, int kvh, int hd, int nk, float scale) {
  std::vector<double> out(static_cast<std::size_t>(nq * heads * hd), 0.0);
  for (int i = 0; i < nq; ++i) {
    for (int h = 0; h < heads; ++h) {
      const int g = h / (heads / kvh);
      std::vector<double> s(nk);
      double mx = -1e300, sum = 0;
      for (int r = 0; r < nk; ++r) {
        double d = 0;
        for (int e = 0; e < hd; ++e) d += double(q[(i * heads + h) * hd + e]) * k[(g * nk + r) * hd + e];
        s[r] = d * scale + mask[i * nk + r];
        mx = std::max(mx, s[r]);
      }
      for (int r = 0; r < nk; ++r) sum += (s[r] = std::exp(s[r] - mx));
      for (int r = 0; r < nk; ++r)
        for (int e = 0; e < hd; ++e) out[(i * heads + h) * hd + e] += s[r] / sum * v[(g * nk + r) * hd + e];
    }
  }
  return out;
}

TEST(Attention, GqaWithMaskMatchesReference) {
  const int nq = 5, heads = 4, kvh = 2, hd = 12, nk = 9;
  std::vector<float> q(nq * heads * hd), k(kvh * nk * hd), v(kvh * nk * hd), mask(nq * nk);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = val(i, 1);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = val(i, 2) * 2;
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = val(i, 3);
  for (int i = 0; i < nq; ++i)
    for (int r = 0; r < nk; ++r) mask[i * nk + r] = (r <= i + 4) ? 0.0f : -120.0f;
  std::vector<float> out(q.size()), scratch;
  const KvSegment seg{k.data(), v.data(), nk, nk * hd};
  attention(q.data(), {nq, heads, kvh, hd}, std::span(&seg, 1), mask.data(), nk, 1.0f, out.data(), scratch);
  const auto ref = reference(q, k, v, mask, nq, heads, kvh, hd, nk, 1.0f);
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], ref[i], 2e-6) << i;
}

// Split into two segments (a past buffer with a different head stride, and the current row),
// the keys give exactly the same result as one contiguous buffer.
TEST(Attention, SegmentsEqualOneBuffer) {
  const int heads = 2, kvh = 2, hd = 8, past = 6, cap = 10;
  std::vector<float> q(heads * hd), k_all(kvh * (past + 1) * hd), v_all(k_all.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = val(i, 4);
  for (std::size_t i = 0; i < k_all.size(); ++i) k_all[i] = val(i, 5), v_all[i] = val(i, 6);
  // The past rows live in a bigger buffer [kvh, cap, hd]; the current row [kvh, 1, hd].
  std::vector<float> k_past(kvh * cap * hd, 99.0f), v_past(k_past.size(), 99.0f), k_cur(kvh * hd), v_cur(kvh * hd);
  for (int h = 0; h < kvh; ++h) {
    for (int r = 0; r < past; ++r)
      for (int d = 0; d < hd; ++d) {
        k_past[(h * cap + r) * hd + d] = k_all[(h * (past + 1) + r) * hd + d];
        v_past[(h * cap + r) * hd + d] = v_all[(h * (past + 1) + r) * hd + d];
      }
    for (int d = 0; d < hd; ++d) {
      k_cur[h * hd + d] = k_all[(h * (past + 1) + past) * hd + d];
      v_cur[h * hd + d] = v_all[(h * (past + 1) + past) * hd + d];
    }
  }
  const std::vector<float> mask(past + 1, 0.0f);
  std::vector<float> one(q.size()), two(q.size()), scratch;
  const KvSegment whole{k_all.data(), v_all.data(), past + 1, (past + 1) * hd};
  attention(q.data(), {1, heads, kvh, hd}, std::span(&whole, 1), mask.data(), 0, 1.0f, one.data(), scratch);
  const KvSegment parts[2] = {{k_past.data(), v_past.data(), past, cap * hd}, {k_cur.data(), v_cur.data(), 1, hd}};
  attention(q.data(), {1, heads, kvh, hd}, parts, mask.data(), 0, 1.0f, two.data(), scratch);
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]);
}

// Closed forms: one allowed key returns its value; equal scores average the values.
TEST(Attention, ClosedForms) {
  const int hd = 4;
  std::vector<float> q = {1, 0, 0, 0};
  std::vector<float> k = {0, 1, 0, 0, 0, 0, 1, 0, 5, 0, 0, 0};  // q.k = 0, 0, 5
  std::vector<float> v = {1, 2, 3, 4, 5, 6, 7, 8, -1, -1, -1, -1};
  std::vector<float> out(hd), scratch;
  const KvSegment seg{k.data(), v.data(), 3, 3 * hd};
  const std::vector<float> only_second = {-120.0f, 0.0f, -120.0f};
  attention(q.data(), {1, 1, 1, hd}, std::span(&seg, 1), only_second.data(), 3, 1.0f, out.data(), scratch);
  for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[d], v[4 + d], 1e-30f + 1e-6f);
  const std::vector<float> first_two = {0.0f, 0.0f, -120.0f};
  attention(q.data(), {1, 1, 1, hd}, std::span(&seg, 1), first_two.data(), 3, 1.0f, out.data(), scratch);
  for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[d], (v[d] + v[4 + d]) / 2, 1e-6);
  // Scale multiplies the scores: with scale 0 all three keys weigh the same.
  const std::vector<float> open(3, 0.0f);
  attention(q.data(), {1, 1, 1, hd}, std::span(&seg, 1), open.data(), 3, 0.0f, out.data(), scratch);
  for (int d = 0; d < hd; ++d) EXPECT_NEAR(out[d], (v[d] + v[4 + d] + v[8 + d]) / 3, 1e-6);
}

}  // namespace
}  // namespace staticlm::cpu

namespace staticlm::cpu {
namespace {

// Splitting (query, head) pairs across threads changes nothing: each is computed the same way.
TEST(Attention, ThreadPoolGivesIdenticalResults) {
  const int nq = 7, heads = 4, kvh = 1, hd = 16, nk = 300;
  std::vector<float> q(nq * heads * hd), k(kvh * nk * hd), v(k.size()), mask(nq * nk, 0.0f);
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = val(static_cast<int>(i), 7);
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = val(static_cast<int>(i), 8), v[i] = val(static_cast<int>(i), 9);
  const KvSegment seg{k.data(), v.data(), nk, nk * hd};
  std::vector<float> a(q.size()), b(q.size()), scratch;
  attention(q.data(), {nq, heads, kvh, hd}, std::span(&seg, 1), mask.data(), nk, 1.0f, a.data(), scratch);
  ThreadPool pool(3);
  attention(q.data(), {nq, heads, kvh, hd}, std::span(&seg, 1), mask.data(), nk, 1.0f, b.data(), scratch, &pool);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace staticlm::cpu

namespace staticlm::cpu {
namespace {

// A decode row (one query, one KV head) with many open keys: its keys are cut in two ranges,
// computed on the pool's threads and merged. The result matches the double reference, and is
// bit-identical without a pool and with 2, 3 or 4 threads (the cut does not follow the thread
// count). With few keys, or none open (the reference over every key), the row is done whole.
TEST(Attention, DecodeRowKeyRangesMatchReferenceOnAnyThreadCount) {
  const int heads = 8, kvh = 1, hd = 64, nk = 400;
  std::vector<float> q(heads * hd), k(kvh * nk * hd), v(k.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = val(static_cast<int>(i), 10) * 0.5f;
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = val(static_cast<int>(i), 11), v[i] = val(static_cast<int>(i), 12);
  const KvSegment seg{k.data(), v.data(), nk, nk * hd};
  // A window of 350 keys with three masked holes (347 x 64 floats: cut), one of 10 (not cut),
  // and none open.
  std::vector<float> wide(nk, -120.0f), narrow(nk, -120.0f), shut(nk, -120.0f);
  for (int r = 30; r < 380; ++r) wide[r] = (r % 97 == 0) ? -120.0f : 0.0f;
  for (int r = 200; r < 210; ++r) narrow[r] = 0.0f;
  for (const auto* mask : {&wide, &narrow, &shut}) {
    auto ref = reference(q, k, v, *mask, 1, heads, kvh, hd, nk, 1.0f);
    if (mask == &shut) ref = reference(q, k, v, std::vector<float>(nk, 0.0f), 1, heads, kvh, hd, nk, 1.0f);
    std::vector<float> alone(q.size()), scratch;
    attention(q.data(), {1, heads, kvh, hd}, std::span(&seg, 1), mask->data(), nk, 1.0f, alone.data(), scratch);
    for (std::size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(alone[i], ref[i], 2e-6) << i;
    for (const int threads : {2, 3, 4}) {
      ThreadPool pool(threads);
      std::vector<float> many(q.size());
      attention(q.data(), {1, heads, kvh, hd}, std::span(&seg, 1), mask->data(), nk, 1.0f, many.data(), scratch, &pool);
      EXPECT_EQ(many, alone) << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace staticlm::cpu
