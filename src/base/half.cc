#include "base/half.h"

namespace staticlm {

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);
  // Subnormal: shift the mantissa up until its leading one is the implicit bit.
  std::uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

std::uint16_t f32_to_f16(float f) {
  const std::uint32_t x = f32_bits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  // 65520 is halfway between 65504 (max finite) and 65536; the tie goes to the even side: inf.
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  const std::uint32_t e = ax >> 23;
  if (e < 113) {  // below 2^-14: an f16 subnormal (or zero), in units of 2^-24
    if (e < 102) return sign;  // under 2^-25: rounds to zero
    const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - e;
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  const std::uint32_t mant = ax & 0x7fffffu;
  std::uint32_t r = ((e - 112) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry into the exponent is correct
  return static_cast<std::uint16_t>(sign | r);
}

}  // namespace staticlm
