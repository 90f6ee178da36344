// Soft-capping in Highway (tanh from hwy/contrib/math), dispatched at run time: the runtime caps
// all 262144 logits of every step, and scalar std::tanh cost milliseconds per token.
#include "runtime/softcap.h"

#include <cmath>
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "runtime/softcap.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace staticlm::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void Softcap(float* x, std::int64_t n, float cap) {
  const hn::ScalableTag<float> d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto c = hn::Set(d, cap);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(hn::Mul(hn::Tanh(d, hn::Div(hn::LoadU(d, x + i), c)), c), d, x + i);
  for (; i < n; ++i) x[i] = std::tanh(x[i] / cap) * cap;
}

}  // namespace staticlm::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm {

HWY_EXPORT(Softcap);

void apply_final_softcap(std::span<float> logits, std::optional<double> cap) {
  if (!cap) return;
  HWY_DYNAMIC_DISPATCH(Softcap)(logits.data(), static_cast<std::int64_t>(logits.size()), static_cast<float>(*cap));
}

}  // namespace staticlm
#endif
