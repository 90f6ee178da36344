// DType, Shape, Tensor and TensorView basics. Expected bit patterns come from the IEEE formats
// (closed forms), not from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "safetensors_test_util.h"
#include "tensor/tensor.h"

namespace staticlm {
namespace {

using test::fails_with;

constexpr DType kAll[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8,
                          DType::kI32, DType::kI64, DType::kBool, DType::kI4};

TEST(DTypeTest, SizesAndNames) {
  const int bits[] = {32, 16, 16, 8, 8, 32, 64, 8, 4};
  const char* names[] = {"F32", "F16", "BF16", "I8", "U8", "I32", "I64", "BOOL", "I4"};
  for (std::size_t i = 0; i < std::size(kAll); ++i) {
    EXPECT_EQ(dtype_bits(kAll[i]), bits[i]) << names[i];
    EXPECT_STREQ(dtype_name(kAll[i]), names[i]);
    EXPECT_EQ(dtype_from_name(names[i]), kAll[i]);
    EXPECT_EQ(dtype_bytes(kAll[i], 6), static_cast<std::size_t>(6 * bits[i] / 8));
  }
  EXPECT_EQ(dtype_bytes(DType::kI4, 5), 3u);  // packed: rounded up
  EXPECT_EQ(dtype_bytes(DType::kI4, 1), 1u);
  EXPECT_EQ(dtype_bytes(DType::kBF16, 0), 0u);
  for (const char* foreign : {"F64", "U16", "F8_E4M3", "bf16", "", "F32 "}) EXPECT_FALSE(dtype_from_name(foreign)) << foreign;
  EXPECT_TRUE(dtype_is_float(DType::kBF16));
  EXPECT_TRUE(dtype_is_float(DType::kF16));
  EXPECT_TRUE(dtype_is_float(DType::kF32));
  EXPECT_FALSE(dtype_is_float(DType::kI8));
  EXPECT_FALSE(dtype_is_float(DType::kBool));
}

TEST(ShapeTest, NumelRankAndText) {
  EXPECT_EQ(Shape({1, 2520, 768}).numel(), 1935360);
  EXPECT_EQ(Shape({1, 2520, 768}).rank(), 3);
  EXPECT_EQ(Shape().numel(), 1);  // a scalar
  EXPECT_EQ(Shape().rank(), 0);
  EXPECT_EQ(Shape({4, 0, 3}).numel(), 0);
  EXPECT_EQ(Shape({1, 2520, 768}).to_string(), "[1, 2520, 768]");
  EXPECT_EQ(Shape().to_string(), "[]");
  Shape s{2, 3};
  s[1] = 5;
  EXPECT_EQ(s, Shape({2, 5}));
  EXPECT_NE(s, Shape({2, 5, 1}));
}

TEST(TensorTest, ZeroFilledAndSized) {
  Tensor t(DType::kBF16, {3, 4});
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.numel(), 12);
  for (auto v : t.as<std::uint16_t>()) EXPECT_EQ(v, 0);
  EXPECT_EQ(Tensor(DType::kI4, {3}).nbytes(), 2u);
}

TEST(TensorTest, FromF32RoundsToNearestEven) {
  // BF16: 1 + 2^-8 is a tie between 1.0 (0x3f80, even) and 1 + 2^-7 (0x3f81): goes to 0x3f80;
  // 1 + 3*2^-8 ties between 0x3f81 (odd) and 0x3f82 (even): goes to 0x3f82.
  const std::vector<float> v = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -2.0f, 1.0f + 0x1p-8f + 0x1p-20f};
  const Tensor b = Tensor::from_f32(DType::kBF16, {4}, v);
  const std::vector<std::uint16_t> want_b = {0x3f80, 0x3f82, 0xc000, 0x3f81};
  EXPECT_EQ(std::vector<std::uint16_t>(b.as<std::uint16_t>().begin(), b.as<std::uint16_t>().end()), want_b);

  // F16 (10-bit mantissa): 1 + 2^-11 ties down to 1.0 (0x3c00); 1 + 3*2^-11 ties up to 0x3c02.
  const std::vector<float> h = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 65504.0f, 0x1p-24f};
  const Tensor f = Tensor::from_f32(DType::kF16, {2, 2}, h);
  const std::vector<std::uint16_t> want_h = {0x3c00, 0x3c02, 0x7bff, 0x0001};
  EXPECT_EQ(std::vector<std::uint16_t>(f.as<std::uint16_t>().begin(), f.as<std::uint16_t>().end()), want_h);

  const Tensor g = Tensor::from_f32(DType::kF32, {4}, v);
  EXPECT_EQ(std::memcmp(g.data(), v.data(), 16), 0);
}

TEST(TensorTest, FromF32RefusesBadInput) {
  const std::vector<float> v = {1, 2, 3};
  EXPECT_TRUE(fails_with([&] { Tensor::from_f32(DType::kF32, {2, 2}, v); }, ErrorKind::kInvalidArgument, "from_f32",
                         {"3 values for shape [2, 2]"}));
  EXPECT_TRUE(fails_with([&] { Tensor::from_f32(DType::kI32, {3}, v); }, ErrorKind::kInvalidArgument, "from_f32",
                         {"I32 is not a float type"}));
}

TEST(TensorTest, GetF32ForEveryDtype) {
  // Bytes laid out by hand (little-endian) so the expected values do not depend on the code under test.
  const std::uint8_t f32[] = {0x00, 0x00, 0xc0, 0xbf};  // -1.5f
  EXPECT_EQ((TensorView{DType::kF32, {1}, f32}.get_f32(0)), -1.5f);
  const std::uint8_t bf16[] = {0x80, 0x3f, 0x20, 0xc0};  // 1.0, -2.5
  EXPECT_EQ((TensorView{DType::kBF16, {2}, bf16}.get_f32(1)), -2.5f);
  const std::uint8_t f16[] = {0x00, 0x3c, 0x00, 0xc0};  // 1.0, -2.0
  EXPECT_EQ((TensorView{DType::kF16, {2}, f16}.get_f32(1)), -2.0f);
  const std::uint8_t i8[] = {0x80, 0x7f};
  EXPECT_EQ((TensorView{DType::kI8, {2}, i8}.get_f32(0)), -128.0f);
  EXPECT_EQ((TensorView{DType::kU8, {2}, i8}.get_f32(0)), 128.0f);
  EXPECT_EQ((TensorView{DType::kBool, {2}, i8}.get_f32(1)), 127.0f);
  const std::uint8_t i32[] = {0xfe, 0xff, 0xff, 0xff};  // -2
  EXPECT_EQ((TensorView{DType::kI32, {1}, i32}.get_f32(0)), -2.0f);
  const std::uint8_t i64[] = {0, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};  // 2^32, -1
  EXPECT_EQ((TensorView{DType::kI64, {2}, i64}.get_f32(0)), 4294967296.0f);
  EXPECT_EQ((TensorView{DType::kI64, {2}, i64}.get_f32(1)), -1.0f);
  EXPECT_TRUE(fails_with([&] { TensorView{DType::kI4, {2}, i8}.get_f32(0); }, ErrorKind::kUnsupported, "get_f32", {"I4"}));
}

TEST(TensorTest, CopyOfIsDeepAndExact) {
  std::vector<std::int32_t> src = {5, -6, 7, -8, 9, -10};
  const TensorView v{DType::kI32, {2, 3}, src.data()};
  Tensor c = Tensor::copy_of(v);
  EXPECT_NE(c.data(), static_cast<const void*>(src.data()));
  EXPECT_EQ(c.shape(), v.shape);
  EXPECT_EQ(c.dtype(), DType::kI32);
  src[0] = 100;  // the copy does not follow its source
  EXPECT_EQ(c.as<std::int32_t>()[0], 5);
  EXPECT_EQ(c.as<std::int32_t>()[5], -10);
  EXPECT_EQ(Tensor::copy_of(TensorView{DType::kF32, {0}, nullptr}).nbytes(), 0u);
}

TEST(TensorTest, AsChecksTheType) {
  Tensor t(DType::kBF16, {2});
  EXPECT_EQ(t.as<std::uint16_t>().size(), 2u);
  EXPECT_TRUE(fails_with([&] { t.as<float>(); }, ErrorKind::kInvalidArgument, "tensor of dtype BF16", {"another type"}));
  EXPECT_TRUE(fails_with([&] { t.view().as<std::int8_t>(); }, ErrorKind::kInvalidArgument, "tensor of dtype BF16", {}));
  Tensor q(DType::kI4, {5});
  EXPECT_EQ(q.as<std::uint8_t>().size(), 3u);  // packed bytes, not values
  Tensor i(DType::kI64, {4});
  EXPECT_EQ(i.as<std::int64_t>().size(), 4u);
  EXPECT_TRUE(fails_with([&] { i.as<std::int32_t>(); }, ErrorKind::kInvalidArgument, "tensor of dtype I64", {}));
}

TEST(TensorTest, AsRefusesMisalignedData) {
  alignas(8) std::uint8_t buf[16] = {};
  EXPECT_EQ((TensorView{DType::kF32, {2}, buf + 4}.as<float>().size()), 2u);
  EXPECT_TRUE(fails_with([&] { TensorView{DType::kF32, {2}, buf + 2}.as<float>(); }, ErrorKind::kInvalidArgument,
                         "tensor of dtype F32", {"4-byte aligned"}));
  EXPECT_TRUE(fails_with([&] { TensorView{DType::kBF16, {2}, buf + 1}.as<std::uint16_t>(); }, ErrorKind::kInvalidArgument,
                         "tensor of dtype BF16", {"2-byte aligned"}));
  EXPECT_EQ((TensorView{DType::kU8, {2}, buf + 1}.as<std::uint8_t>().size()), 2u);  // bytes are always aligned
  // get_f32 and copy_of work whatever the alignment.
  const float v = -3.5f;
  std::memcpy(buf + 1, &v, 4);
  const TensorView odd{DType::kF32, {1}, buf + 1};
  EXPECT_EQ(odd.get_f32(0), -3.5f);
  EXPECT_EQ(Tensor::copy_of(odd).as<float>()[0], -3.5f);
}

}  // namespace
}  // namespace staticlm
