// RMSNorm in Highway, dispatched at run time. A decode step runs eight norms per layer on one
// thread between the parallel GEMVs; the scalar loop's conversions to double cost about a
// microsecond each, 1% of a quantized E2B step.
#include "backends/cpu/kernels/rmsnorm.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/kernels/rmsnorm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace staticlm::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of x[i]^2 in double: no cancellation, and the order of the additions changes only the
// last bits of the double. Four independent chains, so the adds do not wait on each other.
double SumSquares(const float* x, std::int64_t n) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;  // half a float vector, widened lane by lane
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(dd));
  auto s0 = hn::Zero(dd), s1 = hn::Zero(dd), s2 = hn::Zero(dd), s3 = hn::Zero(dd);
  std::int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const auto a = hn::PromoteTo(dd, hn::LoadU(df, x + i)), b = hn::PromoteTo(dd, hn::LoadU(df, x + i + L));
    const auto c = hn::PromoteTo(dd, hn::LoadU(df, x + i + 2 * L)), e = hn::PromoteTo(dd, hn::LoadU(df, x + i + 3 * L));
    s0 = hn::MulAdd(a, a, s0), s1 = hn::MulAdd(b, b, s1), s2 = hn::MulAdd(c, c, s2), s3 = hn::MulAdd(e, e, s3);
  }
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

// y = x * inv (* w): the scalar order of the two products, so every target rounds alike.
void ScaleRow(const float* x, std::int64_t n, float inv, const float* w, float* y) {
  const hn::ScalableTag<float> d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto vi = hn::Set(d, inv);
  std::int64_t i = 0;
  if (w != nullptr) {
    for (; i + L <= n; i += L) hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, x + i), vi), hn::LoadU(d, w + i)), d, y + i);
    for (; i < n; ++i) y[i] = x[i] * inv * w[i];
  } else {
    for (; i + L <= n; i += L) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vi), d, y + i);
    for (; i < n; ++i) y[i] = x[i] * inv;
  }
}

}  // namespace staticlm::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm::cpu {

HWY_EXPORT(SumSquares);
HWY_EXPORT(ScaleRow);

void rms_norm(const float* x, std::int64_t rows, std::int64_t dim, const float* weight, float eps, float* y) {
  const auto sum_squares = HWY_DYNAMIC_DISPATCH(SumSquares);
  const auto scale_row = HWY_DYNAMIC_DISPATCH(ScaleRow);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float ms = static_cast<float>(sum_squares(x + r * dim, dim) / static_cast<double>(dim));
    scale_row(x + r * dim, dim, 1.0f / std::sqrt(ms + eps), weight, y + r * dim);
  }
}

}  // namespace staticlm::cpu
#endif
