// Highway kernels of runtime/argmax.h: one pass for the maximum (and any NaN or +Inf), one for
// the first index holding it, which stops there.
#include "runtime/argmax.h"

#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/argmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace staticlm::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// max: the largest non-NaN value; bad: whether some value is NaN or +Inf.
void ScanMax(const float* x, std::int64_t n, float* max, bool* bad) {
  const hn::ScalableTag<float> d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto neg_inf = hn::Set(d, -INFINITY), pos_inf = hn::Set(d, INFINITY);
  auto top0 = neg_inf, top1 = neg_inf;
  auto any = hn::FirstN(d, 0);  // all false
  std::int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + L);
    any = hn::Or(any, hn::Or(hn::Or(hn::IsNaN(a), hn::Eq(a, pos_inf)), hn::Or(hn::IsNaN(b), hn::Eq(b, pos_inf))));
    top0 = hn::Max(top0, hn::IfThenElse(hn::IsNaN(a), neg_inf, a));
    top1 = hn::Max(top1, hn::IfThenElse(hn::IsNaN(b), neg_inf, b));
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, hn::Max(top0, top1)));
  bool b = !hn::AllFalse(d, any);
  for (; i < n; ++i) {
    if (std::isnan(x[i]) || x[i] == INFINITY) b = true;
    if (x[i] > m) m = x[i];
  }
  *max = m;
  *bad = b;
}

// The first i with x[i] == v, or n.
std::int64_t FirstEqual(const float* x, std::int64_t n, float v) {
  const hn::ScalableTag<float> d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto vv = hn::Set(d, v);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    const intptr_t at = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, x + i), vv));
    if (at >= 0) return i + at;
  }
  for (; i < n; ++i) {
    if (x[i] == v) return i;
  }
  return n;
}

}  // namespace staticlm::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm {

HWY_EXPORT(ScanMax);
HWY_EXPORT(FirstEqual);

MaxScan scan_max(std::span<const float> x) {
  MaxScan r;
  HWY_DYNAMIC_DISPATCH(ScanMax)(x.data(), static_cast<std::int64_t>(x.size()), &r.max, &r.non_finite);
  return r;
}

std::int64_t first_index_of(std::span<const float> x, float v) {
  return HWY_DYNAMIC_DISPATCH(FirstEqual)(x.data(), static_cast<std::int64_t>(x.size()), v);
}

std::int64_t argmax_first(std::span<const float> x) {
  const std::int64_t at = first_index_of(x, scan_max(x).max);
  return at < static_cast<std::int64_t>(x.size()) ? at : 0;
}

}  // namespace staticlm
#endif
