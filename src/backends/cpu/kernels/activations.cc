// gelu_tanh_mul in Highway (tanh from hwy/contrib/math), dispatched at run time; the scalar
// target runs the plain std::tanh loop the SIMD version is tested against.
#include "backends/cpu/kernels/activations.h"

#include <cmath>

#include "backends/cpu/kernels/dispatch.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/kernels/activations.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace staticlm::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void GeluTanhMul(float* gate, const float* up, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const std::int64_t L = static_cast<std::int64_t>(hn::Lanes(d));
  const auto k0 = hn::Set(d, 0.7978845608028654f), k1 = hn::Set(d, 0.044715f), half = hn::Set(d, 0.5f);
  const auto one = hn::Set(d, 1.0f);
  std::int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto x = hn::LoadU(d, gate + i);
    const auto inner = hn::Mul(k0, hn::MulAdd(hn::Mul(k1, x), hn::Mul(x, x), x));
    const auto g = hn::Mul(hn::Mul(half, x), hn::Add(one, hn::Tanh(d, inner)));
    hn::StoreU(hn::Mul(g, hn::LoadU(d, up + i)), d, gate + i);
  }
  for (; i < n; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
}

}  // namespace staticlm::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm::cpu {

HWY_EXPORT(GeluTanhMul);

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

void gelu_tanh_mul_reference(float* gate, const float* up, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) gate[i] = gelu_tanh(gate[i]) * up[i];
}

void gelu_tanh_mul(float* gate, const float* up, std::int64_t n) {
  if (scalar_kernels()) return gelu_tanh_mul_reference(gate, up, n);
  HWY_DYNAMIC_DISPATCH(GeluTanhMul)(gate, up, n);
}

}  // namespace staticlm::cpu
#endif
