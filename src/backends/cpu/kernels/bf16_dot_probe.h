// Whether the AVX-512 BF16 dot product `vdpbf16ps` is worth using on this CPU. It does 32
// multiply-adds per instruction against an f32 FMA's 16, but CPUs run it at very different
// rates: AMD Zen 4 at twice the f32 FMA's flops, Intel's Emerald Rapids at half of them (one
// every two cycles), where rounding activations to bf16 and multiplying with f32 FMAs is the
// faster bf16 GEMM (docs/kernels.md, "bf16 GEMMs: vdpbf16ps or f32 FMA").
#pragma once

#include <cstdint>

namespace staticlm::cpu {

// True when the CPU has AVX-512 BF16 (vdpbf16ps and the AVX-512 BW / VL it is used with).
bool cpu_has_avx512_bf16();

// vdpbf16ps flops per second over AVX-512 f32 FMA flops per second on one core: a register-only
// loop of each (16 independent chains, best of 20 alternated timings of ~50 us); measured once
// per process, on first call. 0 when the CPU lacks AVX-512 BF16.
double bf16_dot_speed_over_fma();

// Independent chains in bf16_dot_chains (AVX-512 has 32 registers; 16 cover a latency of 4-6
// cycles at up to 2 per cycle).
inline constexpr int kBf16DotChains = 16;

#if defined(__x86_64__) || defined(__i386__)
// kBf16DotChains independent vdpbf16ps chains, `iters` rounds (64 flops per chain and round); returns
// a sum of the lanes so nothing folds. Call only when cpu_has_avx512_bf16().
float bf16_dot_chains(std::int64_t iters, float seed);
#endif

}  // namespace staticlm::cpu
