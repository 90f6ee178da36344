#include "kernel_target_option.h"

#include "backends/cpu/kernels/dispatch.h"

namespace staticlm::cli {

void add_kernel_target_option(CLI::App& cmd, std::optional<std::string>& target) {
  cmd.add_option("--kernel-target", target,
                 "kernel target to run (scalar, SSE4, AVX2, AVX3, AVX3_DL, AVX3_DL+BF16, AVX3_DL+AMX...; default: the "
                 "fastest this CPU has: +AMX where it has AMX, +BF16 only where vdpbf16ps outpaces f32 FMA; "
                 "STATICLM_KERNEL_TARGET in the environment does the same)");
}

void apply_kernel_target(const std::optional<std::string>& target) {
  if (target) cpu::select_kernel_target(*target);
}

}  // namespace staticlm::cli
