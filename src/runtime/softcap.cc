// Soft-capping in Highway (tanh from hwy/contrib/math), dispatched at run time: the runtime caps
// all 262144 logits of every step, and scalar std::tanh cost milliseconds per token.
#include "runtime/softcap.h"

#include <algorithm>
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

// Logits per part: E2B's 262144 take 0.22 ms on one core of the Intel machine, serial time in
// every decode step (docs/quantization.md, "What q4's step is made of").
constexpr std::int64_t kSoftcapPart = 16384;

void apply_final_softcap(std::span<float> logits, std::optional<double> cap, ThreadPool* pool) {
  if (!cap) return;
  const auto n = static_cast<std::int64_t>(logits.size());
  const auto c = static_cast<float>(*cap);
  // ~30 operations a logit (tanh), as parallel_for counts cost.
  parallel_for(pool, (n + kSoftcapPart - 1) / kSoftcapPart, 1, 30.0 * kSoftcapPart, [&](std::int64_t p0, std::int64_t p1, int) {
    const std::int64_t i0 = p0 * kSoftcapPart, i1 = std::min(n, p1 * kSoftcapPart);
    HWY_DYNAMIC_DISPATCH(Softcap)(logits.data() + i0, i1 - i0, c);
  });
}

}  // namespace staticlm
#endif
