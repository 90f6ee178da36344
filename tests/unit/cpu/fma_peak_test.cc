// The compute-peak probes return real measurements; any machine does well over 1 GFLOP/s of
// f32 FMA (their exact size is a benchmark's business).
#include "backends/cpu/kernels/fma_peak.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/kernels/bf16_dot_probe.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/gemm_amx.h"

namespace staticlm::cpu {
namespace {

TEST(FmaPeak, F32PositiveAndFinite) {
  ThreadPool pool(2);
  const double gflop_s = measure_fma_peak_gflop_s(pool);
  EXPECT_TRUE(std::isfinite(gflop_s));
  EXPECT_GT(gflop_s, 1.0);
  EXPECT_FALSE(fma_peak_target().empty());
}

TEST(FmaPeak, Bf16DotMeasuredWhereTheCpuHasIt) {
  ThreadPool pool(1);
  const double gflop_s = measure_bf16_dot_peak_gflop_s(pool);
  EXPECT_TRUE(std::isfinite(gflop_s));
  if (cpu_has_avx512_bf16()) {
    EXPECT_GT(gflop_s, 1.0);
  } else {
    EXPECT_EQ(gflop_s, 0.0);
  }
  // The kernels may run it only where the CPU has it.
  if (bf16_dot_kernels()) {
    EXPECT_TRUE(cpu_has_avx512_bf16());
  }
}

// The AMX tile peak where the CPU and the OS offer AMX, and the "+AMX" target only there; a tile
// multiply-add does 16 times an AVX-512 FMA's work, so its peak is well above the FMA's.
TEST(FmaPeak, AmxMeasuredWhereTheCpuHasIt) {
  ThreadPool pool(1);
  const double amx = measure_amx_peak_gflop_s(pool);
  EXPECT_TRUE(std::isfinite(amx));
  const std::vector<std::string> t = kernel_targets();
  const bool listed = std::find(t.begin(), t.end(), "AVX3_DL+AMX") != t.end();
  if (cpu_has_amx()) {
    EXPECT_GT(amx, 2.0 * measure_fma_peak_gflop_s(pool));
  } else {
    EXPECT_EQ(amx, 0.0);
    EXPECT_FALSE(listed);
    EXPECT_THROW(select_kernel_target("AVX3_DL+AMX"), std::exception);
  }
  if (listed) EXPECT_TRUE(cpu_has_amx());
}

// The quick one-core probe that picks the default kernel target (bf16_dot_probe.h) against the
// same ratio from the long all-thread measurements of the peaks: both must put the CPU on the
// same side of kBf16DotMinSpeed where the long ratio is clearly on one side (the CPUs measured so
// far: 0.48 and 2.0).
TEST(FmaPeak, Bf16DotProbeAgreesWithThePeaks) {
  const double probe = bf16_dot_speed_over_fma();
  EXPECT_TRUE(std::isfinite(probe));
  if (!cpu_has_avx512_bf16()) {
    EXPECT_EQ(probe, 0.0);
    return;
  }
  EXPECT_GT(probe, 0.05);
  EXPECT_LT(probe, 20.0);
  const std::string before = kernel_target();
  const std::vector<std::string> t = kernel_targets();
  const auto bf16 = std::find_if(t.begin(), t.end(), [](const std::string& s) { return s.ends_with("+BF16"); });
  if (bf16 == t.end()) {
    // A build whose best Highway target is below AVX-512 (e.g. the sanitizer tree) offers no
    // BF16 kernels, whatever the probe says.
    EXPECT_EQ(default_kernel_target(), t.back());
    return;
  }
  select_kernel_target(*bf16);  // the FMA peak on the same Highway target, the bf16 one measured
  ThreadPool pool(1);
  const double peaks = measure_bf16_dot_peak_gflop_s(pool) / measure_fma_peak_gflop_s(pool);
  select_kernel_target(before);
  if (peaks < 0.7 * kBf16DotMinSpeed) {
    EXPECT_LT(probe, kBf16DotMinSpeed) << "peaks ratio " << peaks;
  }
  if (peaks > 1.4 * kBf16DotMinSpeed) {
    EXPECT_GE(probe, kBf16DotMinSpeed) << "peaks ratio " << peaks;
  }
}

}  // namespace
}  // namespace staticlm::cpu
