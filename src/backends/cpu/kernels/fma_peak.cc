// Compute ceilings: register-only multiply-add loops, one per thread, all threads at once. The
// f32 loop is Highway code compiled once per target (foreach_target re-includes this file) and
// dispatched at run time; the bf16 loop is bf16_dot_probe.h's (AVX-512 BF16 intrinsics, as the kernels use them).
#include "backends/cpu/kernels/fma_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "backends/cpu/kernels/bf16_dot_probe.h"
#include "backends/cpu/kernels/gemm_amx.h"
#include "backends/cpu/kernels/dispatch.h"
#include "hwy/targets.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/kernels/fma_peak.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace staticlm {
namespace cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Twelve independent chains c = c * m + a, `iters` rounds; returns the sum of every lane. Twelve
// covers FMA latency x issue width on current cores (4 x 2) and, with m and a, still fits in
// AVX2's 16 registers, so nothing spills. `seed` comes from outside so nothing folds.
float FmaChains(std::int64_t iters, float seed) {
  const hn::ScalableTag<float> d;
  const auto m = hn::Set(d, 1.0f - seed * 1e-7f);  // |m| < 1 and a small: chains converge, no inf/denormals
  const auto a = hn::Set(d, seed * 1e-3f);
  auto c0 = hn::Set(d, 0.0f), c1 = hn::Set(d, 0.1f), c2 = hn::Set(d, 0.2f), c3 = hn::Set(d, 0.3f);
  auto c4 = hn::Set(d, 0.4f), c5 = hn::Set(d, 0.5f), c6 = hn::Set(d, 0.6f), c7 = hn::Set(d, 0.7f);
  auto c8 = hn::Set(d, 0.8f), c9 = hn::Set(d, 0.9f), c10 = hn::Set(d, 1.0f), c11 = hn::Set(d, 1.1f);
  for (std::int64_t i = 0; i < iters; ++i) {
    c0 = hn::MulAdd(c0, m, a);
    c1 = hn::MulAdd(c1, m, a);
    c2 = hn::MulAdd(c2, m, a);
    c3 = hn::MulAdd(c3, m, a);
    c4 = hn::MulAdd(c4, m, a);
    c5 = hn::MulAdd(c5, m, a);
    c6 = hn::MulAdd(c6, m, a);
    c7 = hn::MulAdd(c7, m, a);
    c8 = hn::MulAdd(c8, m, a);
    c9 = hn::MulAdd(c9, m, a);
    c10 = hn::MulAdd(c10, m, a);
    c11 = hn::MulAdd(c11, m, a);
  }
  const auto s = hn::Add(hn::Add(hn::Add(hn::Add(c0, c1), hn::Add(c2, c3)), hn::Add(hn::Add(c4, c5), hn::Add(c6, c7))),
                         hn::Add(hn::Add(c8, c9), hn::Add(c10, c11)));
  return hn::GetLane(hn::SumOfLanes(d, s));
}

// Flops of one FmaChains round: 12 chains x lanes x 2 (a multiply and an add).
std::int64_t FmaFlopsPerRound() { return 12 * 2 * static_cast<std::int64_t>(hn::Lanes(hn::ScalableTag<float>())); }

std::int64_t FmaTargetBits() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace cpu
}  // namespace staticlm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm::cpu {

HWY_EXPORT(FmaChains);
HWY_EXPORT(FmaFlopsPerRound);
HWY_EXPORT(FmaTargetBits);

namespace {


double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One pass: every pool thread runs kernel(iters) at once; returns the wall time of the pass.
// Results are added into `sink`, which the caller reads, so no pass can be optimised away.
template <typename Kernel>
double timed_pass(ThreadPool& pool, std::int64_t iters, const Kernel& kernel, std::vector<float>& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  pool.parallel_for(pool.size(), 1, [&](std::int64_t begin, std::int64_t end, int worker) {
    for (std::int64_t i = begin; i < end; ++i) sink[static_cast<std::size_t>(worker)] += kernel(iters, 1.0f);
  });
  return seconds_since(t0);
}

// Sizes the loop so one pass takes about 75 ms, then keeps the best of 3 passes. flops_per_iter
// counts one thread's flops per loop round. Returns GFLOP/s over all threads.
template <typename Kernel>
double peak_gflop_s(ThreadPool& pool, double flops_per_iter, const Kernel& kernel) {
  std::vector<float> sink(static_cast<std::size_t>(pool.size()));
  std::int64_t iters = 1 << 12;
  double s = 0;
  // Growing short passes also bring the cores to their steady (AVX) clock before timing.
  while ((s = timed_pass(pool, iters, kernel, sink)) < 0.005) iters *= 4;
  iters = std::max<std::int64_t>(iters, static_cast<std::int64_t>(static_cast<double>(iters) * 0.075 / s));
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    s = timed_pass(pool, iters, kernel, sink);
    best = std::max(best, flops_per_iter * pool.size() * static_cast<double>(iters) / s / 1e9);
  }
  volatile float observed = 0;
  for (float v : sink) observed = observed + v;
  return best;
}

}  // namespace

double measure_fma_peak_gflop_s(ThreadPool& pool) {
  kernel_target();  // applies a pinned target (STATICLM_KERNEL_TARGET) before dispatching
  const double flops_per_round = static_cast<double>(HWY_DYNAMIC_DISPATCH(FmaFlopsPerRound)());
  return peak_gflop_s(pool, flops_per_round,
                      [](std::int64_t iters, float seed) { return HWY_DYNAMIC_DISPATCH(FmaChains)(iters, seed); });
}

std::string fma_peak_target() {
  kernel_target();
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(FmaTargetBits)());
}

double measure_amx_peak_gflop_s(ThreadPool& pool) {
  if (!amx_permitted()) return 0;
  return peak_gflop_s(pool, kAmxFlopsPerRound, amx_dot_chains);
}

double measure_bf16_dot_peak_gflop_s(ThreadPool& pool) {
  if (!cpu_has_avx512_bf16()) return 0;
#if defined(__x86_64__) || defined(__i386__)
  return peak_gflop_s(pool, 64.0 * kBf16DotChains, bf16_dot_chains);
#else
  (void)pool;
  return 0;
#endif
}

}  // namespace staticlm::cpu
#endif  // HWY_ONCE
