// Every SIMD kernel against the scalar reference, on every kernel target this CPU has (SSE4,
// AVX2, AVX3, AVX3_DL, and the AVX-512 BF16 GEMM where present): GEMV/GEMM for F32, F16 and
// BF16 weights with and without bf16 activations, on odd shapes that leave tails everywhere;
// attention (decode with two key segments and with key ranges cut across threads, causal and sliding prefill with padding, a shared
// key-padding mask as the vision tower uses); gelu; RMSNorm; bf16 rounding; the greedy argmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/attention.h"
#include "backends/cpu/kernels/bf16_dot_probe.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/gemm.h"
#include "backends/cpu/kernels/gemm_amx.h"
#include "backends/cpu/kernels/matmul.h"
#include "backends/cpu/kernels/rmsnorm.h"
#include "base/half.h"
#include "runtime/argmax.h"
#include "runtime/masks.h"

namespace staticlm::cpu {
namespace {

// Pins a kernel target for a scope and restores the previous one.
class TargetGuard {
 public:
  explicit TargetGuard(const std::string& t) : saved_(kernel_target()) { select_kernel_target(t); }
  ~TargetGuard() { select_kernel_target(saved_); }

 private:
  std::string saved_;
};

std::vector<std::string> simd_targets() {
  std::vector<std::string> t = kernel_targets();
  t.erase(t.begin());  // "scalar" is the reference
  return t;
}

std::vector<float> random_vec(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(SimdTargets, ListStartsWithScalarAndIncludesTheBest) {
  const auto t = kernel_targets();
  ASSERT_GE(t.size(), 2u) << "no SIMD target on this machine";
  EXPECT_EQ(t.front(), "scalar");
  // Kernels run on the default target: the best, AMX where the CPU has it, else with the BF16
  // kernels where vdpbf16ps outpaces f32 FMA (bf16_dot_probe.h).
  EXPECT_EQ(kernel_target(), default_kernel_target());
  if (t.back() == "AVX3_DL+AMX") EXPECT_TRUE(cpu_has_amx());
  if (t.back().ends_with("+BF16") && bf16_dot_speed_over_fma() < kBf16DotMinSpeed) {
    EXPECT_EQ(default_kernel_target(), t[t.size() - 2]);
  } else {
    EXPECT_EQ(default_kernel_target(), t.back());
  }
  try {
    select_kernel_target("NEON9");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("kernel target 'NEON9' is not available"), std::string::npos) << e.what();
  }
}

struct MatmulCase {
  std::int64_t n, k, m;
};

// |y - ref| <= 2e-6 * sum_i |x_i w_i| + 1e-30: summation order and fused multiply-adds only.
void expect_close_rows(const std::vector<float>& y, const std::vector<float>& ref, const std::vector<float>& bound,
                       const std::string& what) {
  ASSERT_EQ(y.size(), ref.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    ASSERT_LE(std::abs(y[i] - ref[i]), 2e-6f * bound[i] + 1e-30f) << what << " at " << i << ": " << y[i] << " vs "
                                                                   << ref[i];
  }
}

TEST(SimdTargets, MatmulEqualsReferenceOnEveryTargetDtypeAndShape) {
  const MatmulCase cases[] = {{1, 1, 1},   {1, 37, 21}, {2, 130, 33}, {3, 257, 70},  {4, 64, 32},
                              {5, 31, 65}, {9, 300, 7}, {17, 129, 95}, {33, 258, 300}, {70, 513, 40}, {40, 1100, 64}, {48, 1030, 57}};
  ThreadPool pool(2);
  std::uint32_t seed = 1;
  for (const MatmulCase& c : cases) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      for (bool bf16_act : {false, true}) {
        if (bf16_act && dt != DType::kBF16) continue;
        const auto x = random_vec(static_cast<std::size_t>(c.n * c.k), seed++);
        const Tensor wt = Tensor::from_f32(dt, Shape{c.m, c.k}, random_vec(static_cast<std::size_t>(c.m * c.k), seed++));
        WeightMatrix w = weight_matrix(wt.view(), "w");
        w.bf16_activations = bf16_act;
        std::vector<float> ref(static_cast<std::size_t>(c.n * c.m)), bound(ref.size());
        matmul_reference(x.data(), c.n, w, ref.data());
        std::vector<float> wrow(static_cast<std::size_t>(c.k));
        for (std::int64_t j = 0; j < c.m; ++j) {
          weight_row_f32(w, j, wrow.data());
          for (std::int64_t r = 0; r < c.n; ++r) {
            double s = 0;
            for (std::int64_t i = 0; i < c.k; ++i) s += std::abs(double(x[r * c.k + i]) * wrow[i]);
            bound[r * c.m + j] = static_cast<float>(s);
          }
        }
        for (const std::string& t : simd_targets()) {
          TargetGuard g(t);
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
            std::vector<float> y(ref.size(), NAN);
            matmul(x.data(), c.n, w, y.data(), p);
            expect_close_rows(y, ref, bound,
                              t + " " + dtype_name(dt) + (bf16_act ? " bf16-act" : "") + " n=" + std::to_string(c.n) +
                                  " k=" + std::to_string(c.k) + " m=" + std::to_string(c.m));
          }
        }
      }
    }
  }
}

// The bf16 policy is what it says: a GEMM on bf16 activations equals the f32 GEMM of the
// bf16-rounded activations, and differs from the f32-activation result.
TEST(SimdTargets, Bf16ActivationsRoundTheActivations) {
  const std::int64_t n = 8, k = 96, m = 40;
  const auto x = random_vec(n * k, 77);
  const Tensor wt = Tensor::from_f32(DType::kBF16, Shape{m, k}, random_vec(m * k, 78));
  WeightMatrix w = weight_matrix(wt.view(), "w");
  std::vector<float> xr(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
  std::vector<float> f32_of_rounded(n * m), f32_act(n * m), bf16_act(n * m);
  matmul_reference(xr.data(), n, w, f32_of_rounded.data());
  matmul_reference(x.data(), n, w, f32_act.data());
  w.bf16_activations = true;
  for (const std::string& t : kernel_targets()) {
    TargetGuard g(t);
    matmul(x.data(), n, w, bf16_act.data());
    float diff_rounded = 0, diff_f32 = 0;
    for (std::size_t i = 0; i < bf16_act.size(); ++i) {
      diff_rounded = std::max(diff_rounded, std::abs(bf16_act[i] - f32_of_rounded[i]));
      diff_f32 = std::max(diff_f32, std::abs(bf16_act[i] - f32_act[i]));
    }
    EXPECT_LT(diff_rounded, 2e-5f) << t;
    EXPECT_GT(diff_f32, 1e-4f) << t << ": activations were not rounded";
  }
}

TEST(SimdTargets, RoundToBf16IsRoundToNearestEven) {
  auto x = random_vec(1000, 5, -1e3f, 1e3f);
  x.push_back(1.0f + 1.0f / 256.0f);  // a tie: rounds to even (1.0)
  x.push_back(1.0f + 3.0f / 256.0f);  // a tie: rounds to even (1 + 4/256)
  for (const std::string& t : simd_targets()) {
    TargetGuard g(t);
    std::vector<float> y(x.size());
    round_to_bf16(x.data(), static_cast<std::int64_t>(x.size()), y.data());
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], bf16_to_f32(f32_to_bf16(x[i]))) << t << " " << x[i];
  }
}

// RMSNorm on every target against the mean of squares in long double: widths that leave a
// tail on every vector length, rows of very different scale, with and without a weight, in place.
TEST(SimdTargets, RmsNormEqualsLongDoubleReference) {
  for (const std::int64_t dim : {1, 7, 37, 256, 1536}) {
    const std::int64_t rows = 3;
    std::vector<float> x = random_vec(static_cast<std::size_t>(rows * dim), 51, -3.0f, 3.0f);
    for (std::int64_t i = dim; i < 2 * dim; ++i) x[static_cast<std::size_t>(i)] *= 1e4f;  // row 1 large
    for (std::int64_t i = 2 * dim; i < 3 * dim; ++i) x[static_cast<std::size_t>(i)] *= 1e-4f;  // row 2 small
    const auto w = random_vec(static_cast<std::size_t>(dim), 52, 0.5f, 2.0f);
    for (const float* weight : {w.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> ref(x.size());
      for (std::int64_t r = 0; r < rows; ++r) {
        long double sum = 0;
        for (std::int64_t i = 0; i < dim; ++i) sum += static_cast<long double>(x[r * dim + i]) * x[r * dim + i];
        const long double inv = 1.0L / std::sqrt(sum / dim + 1e-6L);
        for (std::int64_t i = 0; i < dim; ++i) ref[r * dim + i] = static_cast<float>(x[r * dim + i] * inv * (weight ? weight[i] : 1.0f));
      }
      for (const std::string& t : kernel_targets()) {
        TargetGuard g(t);
        std::vector<float> y(x.size(), NAN), z = x;
        rms_norm(x.data(), rows, dim, weight, 1e-6f, y.data());
        rms_norm(z.data(), rows, dim, weight, 1e-6f, z.data());
        for (std::size_t i = 0; i < y.size(); ++i) {
          ASSERT_NEAR(y[i], ref[i], 4e-7f * std::abs(ref[i])) << t << " dim " << dim << " at " << i;
          ASSERT_EQ(z[i], y[i]) << t << " in place, dim " << dim << " at " << i;
        }
      }
    }
  }
}

TEST(SimdTargets, GeluEqualsReference) {
  const auto g0 = random_vec(1003, 9, -8.0f, 8.0f), up = random_vec(1003, 10);
  std::vector<float> ref = g0;
  gelu_tanh_mul_reference(ref.data(), up.data(), static_cast<std::int64_t>(ref.size()));
  for (const std::string& t : simd_targets()) {
    TargetGuard g(t);
    std::vector<float> y = g0;
    gelu_tanh_mul(y.data(), up.data(), static_cast<std::int64_t>(y.size()));
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], 4e-6f * (1.0f + std::abs(ref[i]))) << t << " " << i;
  }
}

// Attention on every target equals the reference (which visits every key) for the mask shapes
// the runtime builds.
struct AttentionCase {
  const char* name;
  std::int64_t queries, heads, kv_heads, hd, keys;
};

void expect_attention_matches(const AttentionCase& c, const std::vector<float>& mask, std::int64_t mask_stride,
                              std::vector<KvSegment> segs, const std::vector<float>& q) {
  const AttentionShape shape{c.queries, c.heads, c.kv_heads, c.hd};
  std::vector<float> ref(q.size()), scratch;
  attention_reference(q.data(), shape, segs, mask.data(), mask_stride, 0.125f, ref.data(), scratch);
  ThreadPool pool(2);
  for (const std::string& t : simd_targets()) {
    TargetGuard g(t);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> out(q.size(), NAN);
      attention(q.data(), shape, segs, mask.data(), mask_stride, 0.125f, out.data(), scratch, p);
      for (std::size_t i = 0; i < out.size(); ++i) {
        ASSERT_NEAR(out[i], ref[i], 2e-5f) << c.name << " on " << t << " at " << i;
      }
    }
  }
}

TEST(SimdTargets, PrefillAttentionCausalSlidingAndPadding) {
  // 70 queries over 100 slots (30 of padding), one KV head for 4 query heads, head_dim 40.
  for (std::optional<std::int64_t> window : {std::optional<std::int64_t>(), std::optional<std::int64_t>(16)}) {
    const AttentionCase c{window ? "sliding" : "causal", 100, 4, 1, 40, 100};
    std::vector<float> mask(100 * 100);
    build_prefill_mask(mask, 100, 70, window, -120.0f);
    const auto k = random_vec(100 * 40, 21, -3, 3), v = random_vec(100 * 40, 22);
    const auto q = random_vec(100 * 4 * 40, 23, -3, 3);
    expect_attention_matches(c, mask, 100, {KvSegment{k.data(), v.data(), 100, 100 * 40}}, q);
  }
}

TEST(SimdTargets, SharedKeyPaddingMaskAsTheVisionTower) {
  const AttentionCase c{"vision", 150, 3, 3, 24, 150};
  std::vector<float> mask(150, 0.0f);
  for (int r = 131; r < 150; ++r) mask[r] = -INFINITY;
  const auto k = random_vec(3 * 150 * 24, 31, -2, 2), v = random_vec(3 * 150 * 24, 32);
  const auto q = random_vec(150 * 3 * 24, 33, -2, 2);
  expect_attention_matches(c, mask, 0, {KvSegment{k.data(), v.data(), 150, 150 * 24}}, q);
}

TEST(SimdTargets, DecodeAttentionReadsPastAndCurrentSegments) {
  // max_seq 64 with 20 past slots used, and max_seq 512 with 400 (with two threads, enough key
  // floats for head_dim 72 to be cut in two key ranges and merged), plus the current token's
  // row. Heads per KV head: 4 (two groups), 8 (one group), 5 (tiles of 4 heads left short).
  // Head dims 32 and 72 (72 = 4 vectors of 16 + 8: every part of the value loop on every
  // vector length); 21 open keys (a short tile); windows of 8 and 350.
  for (const auto& [seq, used] : {std::pair<std::int64_t, std::int64_t>{64, 20}, {512, 400}}) {
    for (const std::int64_t hd : {32, 72}) {
      for (const auto& [heads, kv_heads] : {std::pair<int, int>{8, 2}, {8, 1}, {5, 1}}) {
        for (const bool sliding : {false, true}) {
          const std::optional<std::int64_t> window = sliding ? std::optional<std::int64_t>(seq == 64 ? 8 : 350) : std::nullopt;
          const AttentionCase c{window ? "decode sliding" : "decode", 1, heads, kv_heads, hd, seq};
          std::vector<float> mask(static_cast<std::size_t>(seq));
          build_decode_mask(mask, seq, used, window, -120.0f);
          const std::int64_t past = seq - 1;
          const auto past_k = random_vec(2 * past * hd, 41, -3, 3), past_v = random_vec(2 * past * hd, 42);
          const auto cur_k = random_vec(2 * hd, 43, -3, 3), cur_v = random_vec(2 * hd, 44);
          const auto q = random_vec(heads * hd, 45, -3, 3);
          expect_attention_matches(c, mask, seq,
                                   {KvSegment{past_k.data(), past_v.data(), past, past * hd},
                                    KvSegment{cur_k.data(), cur_v.data(), 1, hd}},
                                   q);
        }
      }
    }
  }
}

// The greedy argmax and the logit scan on every target equal their scalar definition.
TEST(SimdTargets, ArgmaxAndMaxScan) {
  for (const std::size_t n : {std::size_t{1}, std::size_t{15}, std::size_t{33}, std::size_t{1000}, std::size_t{262144}}) {
    std::vector<float> x = random_vec(static_cast<std::int64_t>(n), 51, -5, 5);
    const std::size_t top = n * 2 / 3;
    x[top] = 9.0f;
    if (top + 1 < n) x[top + 1] = 9.0f;
    for (const std::string& t : simd_targets()) {
      TargetGuard g(t);
      EXPECT_EQ(argmax_first(x), static_cast<std::int64_t>(top)) << n << " on " << t;
      EXPECT_EQ(scan_max(x).max, 9.0f) << n << " on " << t;
      EXPECT_FALSE(scan_max(x).non_finite) << n << " on " << t;
      std::vector<float> y = x;
      y[n / 3] = NAN;
      EXPECT_TRUE(scan_max(y).non_finite) << n << " on " << t;
      EXPECT_EQ(argmax_first(y), static_cast<std::int64_t>(n / 3 == top ? (top + 1 < n ? top + 1 : 0) : top)) << n << " on " << t;
    }
  }
}

}  // namespace
}  // namespace staticlm::cpu
