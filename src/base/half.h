// f32 <-> bf16 / f16 conversions, round-to-nearest-even (what PyTorch's .to() does).
// NaN stays NaN (made quiet), infinities stay infinite, f16 subnormals are exact.
#pragma once

#include <cstdint>
#include <cstring>

namespace staticlm {

inline std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float f32_from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_f32(std::uint16_t h) { return f32_from_bits(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // ties go to the even neighbour
  return static_cast<std::uint16_t>((x + rounding) >> 16);
}

float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);

}  // namespace staticlm
