// The machine's compute ceilings, measured: what prefill and the vision tower (compute-bound
// GEMMs) are compared against. Each runs on all of the pool's threads at once, each thread an
// unrolled loop of independent multiply-add chains on registers only (no memory traffic), for
// about 75 ms per pass; the best of 3 passes is kept.
#pragma once

#include <string>

#include "base/thread_pool.h"

namespace staticlm::cpu {

// Peak f32 FMA throughput in GFLOP/s (1e9 flops per second, 2 per lane per MulAdd) of the
// Highway target that runtime dispatch picks (the pinned kernel target's, or the best one).
double measure_fma_peak_gflop_s(ThreadPool& pool);

// The Highway target measure_fma_peak_gflop_s runs on, e.g. "AVX3_DL".
std::string fma_peak_target();

// Peak throughput of the AVX-512 BF16 dot product `vdpbf16ps` in GFLOP/s (64 flops per
// instruction: 16 f32 lanes, each 2 bf16 multiply-adds), whether or not the kernels use it
// (bf16_dot_kernels()); 0 when the CPU lacks the instruction.
double measure_bf16_dot_peak_gflop_s(ThreadPool& pool);

// Peak throughput of the AMX bf16 tile multiply-add `tdpbf16ps` in GFLOP/s (16 x 16 x 32
// multiply-adds per instruction), whether or not the kernels use it (amx_kernels()); 0 when the
// CPU (or the OS) offers no AMX.
double measure_amx_peak_gflop_s(ThreadPool& pool);

}  // namespace staticlm::cpu
