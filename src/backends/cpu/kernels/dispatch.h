// Which kernel implementation the CPU backend runs. One binary carries several: a plain scalar
// reference, Highway code compiled for every x86 target (SSE4, AVX2, AVX3, AVX3_DL) and picked
// at run time from CPUID, and hand-written AVX-512 BF16 kernels (Highway 1.0.3 has no bf16 dot
// product) used when the CPU has `vdpbf16ps`, and AVX-512 VNNI int8 GEMVs for quantized weights
// on the AVX3_DL targets. The fastest target is chosen on first use (default_kernel_target); tests and
// benchmarks may pin another (select_kernel_target, or STATICLM_KERNEL_TARGET in the
// environment). The choice is process-wide, like the CPU itself.
#pragma once

#include <string>
#include <vector>

namespace staticlm::cpu {

// Targets this CPU can run, worst first: "scalar", then Highway targets ("SSE4", "AVX2",
// "AVX3", "AVX3_DL"), then "AVX3_DL+BF16" (or "AVX3+BF16") when the CPU has AVX-512 BF16, then
// "AVX3_DL+AMX" when it also has AMX (gemm_amx.h): AVX3_DL with the AMX bf16 GEMM for every
// GEMM whose activations are rounded to bf16 (bf16 and quantized weights).
std::vector<std::string> kernel_targets();

// vdpbf16ps flops per second, over f32 FMA's, from which the BF16 kernels are the default
// (bf16_dot_probe.h): they do twice the work per instruction, so at a lower rate the f32
// kernels on bf16-rounded activations are the faster bf16 GEMM. Measured: 2.0 on AMD EPYC
// (Zen 4), 0.48 on Intel Xeon (Emerald Rapids), where bf16 prefill of E2B ran 1.44x faster
// on AVX3_DL than on AVX3_DL+BF16.
inline constexpr double kBf16DotMinSpeed = 1.0;

// The target kernels run on unless pinned: the last of kernel_targets(), except that "+AMX" is
// left out where Linux refuses the tile registers (amx_permitted()) and a last "+BF16" target is
// left for the one before it where bf16_dot_speed_over_fma() < kBf16DotMinSpeed.
std::string default_kernel_target();

// Pins a target from kernel_targets(); kInvalidArgument naming the others otherwise. Not
// thread-safe against running kernels: call between runs.
void select_kernel_target(const std::string& name);

// The target kernels run on now (default_kernel_target() unless pinned).
std::string kernel_target();

// True when kernels must use the scalar reference code.
bool scalar_kernels();
// True when bf16 GEMMs may use the AVX-512 BF16 dot-product kernel.
bool bf16_dot_kernels();
// True when quantized decode GEMVs may use the AVX-512 VNNI int8 kernel (the AVX3_DL targets).
bool vnni_kernels();
// True when GEMMs of activations rounded to bf16 use the AMX kernel ("+AMX").
bool amx_kernels();

}  // namespace staticlm::cpu
