#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "base/half.h"

namespace staticlm {
namespace {

TEST(Bf16, ExactValuesRoundTrip) {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 39.25f, 65536.0f, 0x1p-100f}) {
    EXPECT_EQ(bf16_to_f32(f32_to_bf16(v)), v) << v;
  }
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, TiesGoToEven) {
  // 1 + 2^-8 lies exactly between 1 (even mantissa) and 1 + 2^-7: rounds down to 1.
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808000)), 0x3f80);
  // 1 + 3*2^-8 lies between 1 + 2^-7 (odd) and 1 + 2^-6 (even): rounds up.
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f818000)), 0x3f82);
  // Just above a tie rounds up, just below rounds down.
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f807fff)), 0x3f80);
  // sqrt(1536) = 39.1918... rounds to 39.25 in bf16 (spec/gemma4.md 2.2).
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(std::sqrt(1536.0f))), 39.25f);
}

TEST(Bf16, InfNanAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_bf16(inf), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-inf), 0xff80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
  // A NaN whose payload lives only in the low 16 bits must not become infinity.
  const float low_payload_nan = f32_from_bits(0x7f800001);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(low_payload_nan))));
  // The largest float rounds up to infinity.
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(Bf16, Subnormals) {
  // f32 subnormals keep their top bits: 2^-130 is representable in bf16.
  const float tiny = std::ldexp(1.0f, -130);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(tiny)), tiny);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
}

TEST(F16, ExactValuesRoundTrip) {
  for (float v : {0.0f, 1.0f, -1.5f, 65504.0f, 0.099975586f, std::ldexp(1.0f, -14), std::ldexp(1.0f, -24)}) {
    EXPECT_EQ(f16_to_f32(f32_to_f16(v)), v) << v;
  }
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
}

TEST(F16, TiesGoToEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to even (1).
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): up.
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // 65520 is halfway between 65504 and 65536 (= inf): ties to even = inf; just below stays finite.
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);
}

TEST(F16, Subnormals) {
  const float min_sub = std::ldexp(1.0f, -24);
  EXPECT_EQ(f32_to_f16(min_sub), 0x0001);
  EXPECT_EQ(f32_to_f16(3 * min_sub), 0x0003);
  EXPECT_EQ(f16_to_f32(0x0001), min_sub);
  EXPECT_EQ(f16_to_f32(0x03ff), 1023 * min_sub);
  EXPECT_EQ(f16_to_f32(0x8001), -min_sub);
  // Half of the smallest subnormal ties to zero (even); a bit more rounds to it.
  EXPECT_EQ(f32_to_f16(min_sub / 2), 0x0000);
  EXPECT_EQ(f32_to_f16(min_sub * 0.5000001f), 0x0001);
  // 1.5 * min_sub ties to 2 * min_sub (even); 2.5 * min_sub ties to 2.
  EXPECT_EQ(f32_to_f16(1.5f * min_sub), 0x0002);
  EXPECT_EQ(f32_to_f16(2.5f * min_sub), 0x0002);
  // The largest subnormal rounds up into the smallest normal when just below it.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(1e-10f), 0x0000);
}

TEST(F16, InfNan) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16(inf), 0x7c00);
  EXPECT_EQ(f32_to_f16(-inf), 0xfc00);
  EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  const std::uint16_t nan = f32_to_f16(std::nanf(""));
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  EXPECT_TRUE(std::isnan(f16_to_f32(nan)));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f32_from_bits(0x7f800001)))));
}

TEST(F16, AllHalfValuesRoundTripThroughF32) {
  // Every f16 bit pattern converts to f32 and back to itself (NaNs stay NaN).
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<std::uint16_t>(h));
    const std::uint16_t back = f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(back)));
    } else {
      ASSERT_EQ(back, h) << h;
    }
  }
}

}  // namespace
}  // namespace staticlm
