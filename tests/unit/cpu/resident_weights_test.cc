#include "backends/cpu/resident_weights.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "base/half.h"
#include "quant/formats.h"

namespace staticlm::cpu {
namespace {

// One matrix of each weight format, quantized from the same odd-valued f32 matrix; the test owns
// the bytes the views point into.
struct Formats {
  static constexpr std::int64_t rows = 37, cols = 96;  // rows odd; cols a multiple of the q4 group
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
  std::vector<std::int8_t> q8;
  std::vector<float> q8_scales, u4_scales;
  std::vector<std::uint8_t> q4, u4, u4_zero;
  std::vector<std::uint16_t> q4_scales;
  Formats() {
    for (std::int64_t i = 0; i < rows * cols; ++i) f32.push_back(static_cast<float>((i * 37) % 101 - 50) / 16.0f);
    for (float v : f32) bf16.push_back(f32_to_bf16(v));
    q8.resize(rows * cols);
    q8_scales.resize(rows);
    quant::quantize_q8(f32, rows, cols, q8, q8_scales);
    q4.resize(rows * cols / 2);
    q4_scales.resize(rows * cols / quant::kQ4Group);
    quant::quantize_q4(f32, rows, cols, q4, q4_scales);
    u4.resize(rows * cols / 2);
    u4_scales.resize(rows);
    u4_zero.resize(rows);
    quant::quantize_asym(f32, rows, cols, 4, u4, u4_scales, u4_zero);
  }
  std::vector<WeightMatrix> matrices() const {
    const Shape s{rows, cols};
    std::vector<WeightMatrix> m;
    m.push_back(weight_matrix({DType::kF32, s, f32.data()}, "f32"));
    m.push_back(weight_matrix({DType::kBF16, s, bf16.data()}, "bf16"));
    m.push_back(quantized_weight_matrix({DType::kI8, s, q8.data()}, {DType::kF32, Shape{rows}, q8_scales.data()}, "q8"));
    m.push_back(quantized_weight_matrix({DType::kI4, s, q4.data()},
                                        {DType::kF16, Shape{rows, cols / quant::kQ4Group}, q4_scales.data()}, "q4"));
    const TensorView zp{DType::kU8, Shape{rows}, u4_zero.data()};
    m.push_back(quantized_weight_matrix({DType::kU4, s, u4.data()}, {DType::kF32, Shape{rows}, u4_scales.data()}, "u4", rows,
                                        cols, &zp));
    return m;
  }
};

bool inside(const void* p, std::size_t n, const HugePageBuffer& b) {
  const auto* c = static_cast<const std::uint8_t*>(p);
  const auto* begin = static_cast<const std::uint8_t*>(b.data());
  return c >= begin && c + n <= begin + b.size();
}

TEST(ResidentWeights, CopiesEveryPieceAlignedAndComputesTheSameProducts) {
  const Formats f;
  const std::vector<WeightMatrix> original = f.matrices();
  std::vector<WeightMatrix> moved = original;
  WeightMatrix empty;  // a KV-shared layer's k_proj: nothing to copy
  std::vector<WeightMatrix*> list;
  for (WeightMatrix& m : moved) list.push_back(&m);
  list.push_back(&empty);
  std::vector<std::pair<const void*, std::size_t>> told;
  const auto buffer = make_resident(list, [&](const void* p, std::size_t n) { told.emplace_back(p, n); });
  // What each matrix holds, by format: values, scales, zero points (bytes).
  const std::size_t rc = Formats::rows * Formats::cols;
  const std::vector<std::vector<std::pair<const void*, std::size_t>>> want = {
      {{f.f32.data(), rc * 4}},
      {{f.bf16.data(), rc * 2}},
      {{f.q8.data(), rc}, {f.q8_scales.data(), Formats::rows * 4}},
      {{f.q4.data(), rc / 2}, {f.q4_scales.data(), f.q4_scales.size() * 2}},
      {{f.u4.data(), rc / 2}, {f.u4_scales.data(), Formats::rows * 4}, {f.u4_zero.data(), Formats::rows}}};
  std::vector<std::pair<const void*, std::size_t>> all;
  std::size_t total = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    all.insert(all.end(), want[i].begin(), want[i].end());
    total += resident_bytes(original[i]);
    const WeightMatrix& m = moved[i];
    const void* now[] = {m.data, m.scales, m.zero_points};
    for (std::size_t k = 0; k < want[i].size(); ++k) {
      const auto [from, n] = want[i][k];
      EXPECT_TRUE(inside(now[k], n, *buffer)) << i << " piece " << k;
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(now[k]) % 64, 0u) << i << " piece " << k;
      EXPECT_EQ(std::memcmp(now[k], from, n), 0) << i << " piece " << k;
    }
  }
  EXPECT_EQ(told, all);  // each source range, once, in order; none for the empty matrix
  EXPECT_EQ(empty.data, nullptr);
  EXPECT_GE(buffer->size(), total);
  EXPECT_LT(buffer->size(), total + kHugePageBytes);
  // The kernels read the copies as they read the originals: a GEMV (one row) and a GEMM.
  std::vector<float> x(5 * Formats::cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) - 6.0f;
  for (std::size_t i = 0; i < original.size(); ++i) {
    for (std::int64_t n : {1, 5}) {
      std::vector<float> a(n * Formats::rows), b(n * Formats::rows);
      matmul(x.data(), n, original[i], a.data());
      matmul(x.data(), n, moved[i], b.data());
      EXPECT_EQ(a, b) << i << " rows " << n;
    }
  }
}

}  // namespace
}  // namespace staticlm::cpu
