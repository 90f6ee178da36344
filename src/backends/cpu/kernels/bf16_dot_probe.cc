// vdpbf16ps against f32 FMA, one core, registers only; see bf16_dot_probe.h.
#include "backends/cpu/kernels/bf16_dot_probe.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace staticlm::cpu {

bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

#if defined(__x86_64__) || defined(__i386__)
namespace {

constexpr int kChains = kBf16DotChains;

// The sum of every lane of the chains (what the loops return, so nothing folds). Summed in
// scalar code: g++ 12 warns inside _mm512_reduce_add_ps.
__attribute__((target("avx512f"))) inline float sum_lanes(const __m512* c) {
  __m512 s = c[0];
  for (int j = 1; j < kChains; ++j) s = _mm512_add_ps(s, c[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

// The f32 counterpart of bf16_dot_chains: 16 chains of _mm512_fmadd_ps (32 flops each).
__attribute__((target("avx512f"))) float fma_chains(std::int64_t iters, float seed) {
  const __m512 m = _mm512_set1_ps(1.0f - seed * 1e-7f);  // |m| < 1, a small: no inf or denormals
  const __m512 a = _mm512_set1_ps(seed * 1e-3f);
  __m512 c[kChains];
  for (int j = 0; j < kChains; ++j) c[j] = _mm512_set1_ps(0.1f * static_cast<float>(j));
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) c[j] = _mm512_fmadd_ps(c[j], m, a);
  }
  return sum_lanes(c);
}

// Seconds of one call of kernel(iters).
template <typename Kernel>
double seconds(const Kernel& kernel, std::int64_t iters, float& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  sink += kernel(iters, 1.0f);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double measure_ratio() {
  constexpr std::int64_t kIters = 3000;  // 48 000 instructions: 25-50 us on current cores
  float sink = 0;
  double fma = 1e30, bf16 = 1e30;
  // The first round also brings the core to its AVX-512 clock; alternating keeps a noisy
  // neighbour from favouring one side, and the fastest of each is the core's rate. Twenty of
  // each (about 2 ms): the choice of kernel target rests on this ratio, and a process that
  // chose otherwise computes other last bits (a recording made by one process then failed a
  // bit-exact check in another, in a loaded CI run of session 41 with five of each).
  for (int round = 0; round < 21; ++round) {
    const double f = seconds(fma_chains, kIters, sink), b = seconds(bf16_dot_chains, kIters, sink);
    if (round == 0) continue;
    fma = std::min(fma, f);
    bf16 = std::min(bf16, b);
  }
  volatile float observed = sink;
  (void)observed;
  // Flops per second: 64 per vdpbf16ps, 32 per FMA, the same count of each per call.
  return (64.0 / bf16) / (32.0 / fma);
}

}  // namespace

__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) float bf16_dot_chains(std::int64_t iters,
                                                                                         float seed) {
  const __m512 x = _mm512_set1_ps(seed * (1.0f / 1024));  // products ~1e-6: no overflow
  const __m512bh a = _mm512_cvtne2ps_pbh(x, x);
  const __m512bh b = _mm512_cvtne2ps_pbh(x, x);
  __m512 c[kChains];
  for (int j = 0; j < kChains; ++j) c[j] = _mm512_set1_ps(0.1f * static_cast<float>(j));
  for (std::int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kChains; ++j) c[j] = _mm512_dpbf16_ps(c[j], a, b);
  }
  return sum_lanes(c);
}
#endif

double bf16_dot_speed_over_fma() {
#if defined(__x86_64__) || defined(__i386__)
  static const double ratio = cpu_has_avx512_bf16() ? measure_ratio() : 0.0;
  return ratio;
#else
  return 0.0;
#endif
}

}  // namespace staticlm::cpu
