// The compute-peak probes return real measurements; any machine does well over 1 GFLOP/s of
// f32 FMA (their exact size is a benchmark's business).
#include "backends/cpu/kernels/fma_peak.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/kernels/dispatch.h"

namespace staticlm::cpu {
namespace {

TEST(FmaPeak, F32PositiveAndFinite) {
  ThreadPool pool(2);
  const double gflop_s = measure_fma_peak_gflop_s(pool);
  EXPECT_TRUE(std::isfinite(gflop_s));
  EXPECT_GT(gflop_s, 1.0);
  EXPECT_FALSE(fma_peak_target().empty());
}

TEST(FmaPeak, Bf16DotOnlyOnItsKernelTarget) {
  ThreadPool pool(1);
  const double gflop_s = measure_bf16_dot_peak_gflop_s(pool);
  EXPECT_TRUE(std::isfinite(gflop_s));
  if (bf16_dot_kernels()) {
    EXPECT_GT(gflop_s, 1.0);
  } else {
    EXPECT_EQ(gflop_s, 0.0);
  }
  // Pinned to a target without it, the bf16 peak is not measured.
  const std::string before = kernel_target();
  select_kernel_target("scalar");
  EXPECT_EQ(measure_bf16_dot_peak_gflop_s(pool), 0.0);
  select_kernel_target(before);
}

}  // namespace
}  // namespace staticlm::cpu
