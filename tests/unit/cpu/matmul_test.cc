#include "backends/cpu/kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/embedding.h"
#include "quant/formats.h"
#include "base/error.h"
#include "base/half.h"

namespace staticlm::cpu {
namespace {

// Small integers and halves: exact in f32, f16 and bf16, so every dtype must give the exact
// product that the double-precision reference gives.
float value(std::int64_t i, std::int64_t j) { return static_cast<float>((i * 7 + j * 3) % 11 - 5) * 0.5f; }

Tensor make_weight(DType dtype, std::int64_t rows, std::int64_t cols) {
  std::vector<float> v(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) v[r * cols + c] = value(r, c);
  return Tensor::from_f32(dtype, Shape{rows, cols}, v);
}

class MatmulDtypes : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulDtypes, MatchesDoubleReference) {
  const std::int64_t n = 3, in = 37, out = 21;  // neither a multiple of 8 nor of the row block
  const Tensor w = make_weight(GetParam(), out, in);
  const WeightMatrix wm = weight_matrix(w.view(), "w", out, in);
  std::vector<float> x(n * in);
  for (std::int64_t i = 0; i < n * in; ++i) x[i] = static_cast<float>(i % 9) - 4.0f;
  std::vector<float> y(n * out);
  matmul(x.data(), n, wm, y.data());
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      double ref = 0;
      for (std::int64_t c = 0; c < in; ++c) ref += static_cast<double>(x[r * in + c]) * value(o, c);
      EXPECT_EQ(y[r * out + o], static_cast<float>(ref)) << r << " " << o;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulDtypes, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16));

// bf16 weights are widened exactly: a weight that bf16 rounds (1/3) gives the product with its
// bf16 value, not with 1/3.
TEST(Matmul, Bf16WeightsAreWidenedNotReRounded) {
  const float third = 1.0f / 3.0f;
  const Tensor w = Tensor::from_f32(DType::kBF16, Shape{1, 1}, std::vector<float>{third});
  const float x = 3.0f;
  float y = 0;
  matmul(&x, 1, weight_matrix(w.view(), "w"), &y);
  EXPECT_EQ(y, 3.0f * bf16_to_f32(f32_to_bf16(third)));
  EXPECT_NE(y, 1.0f);
}

TEST(Matmul, BadWeightsAreRefused) {
  const Tensor w = make_weight(DType::kF32, 4, 5);
  try {
    weight_matrix(w.view(), "model.layers.0.mlp.up_proj.weight", 4, 6);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "weight model.layers.0.mlp.up_proj.weight: shape [4, 5], expected [4, 6]");
  }
  const Tensor ints(DType::kI32, Shape{2, 2});
  EXPECT_THROW(weight_matrix(ints.view(), "w"), Error);
}

TEST(Embedding, GathersAndScales) {
  const Tensor table = make_weight(DType::kBF16, 10, 6);
  const std::vector<std::int64_t> ids = {7, 0, 7, 9};
  std::vector<float> out(4 * 6);
  embedding_lookup(weight_matrix(table.view(), "e"), ids, 8.0f, out.data());
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (int j = 0; j < 6; ++j) EXPECT_EQ(out[i * 6 + j], value(ids[i], j) * 8.0f);
}

TEST(Embedding, IdOutsideVocabularyIsRefused) {
  const Tensor table = make_weight(DType::kF32, 10, 2);
  std::vector<float> out(4);
  const std::vector<std::int64_t> ids = {3, 10};
  try {
    embedding_lookup(weight_matrix(table.view(), "e"), ids, 1.0f, out.data());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_STREQ(e.what(), "token id 10 at position 1 is outside the vocabulary [0, 10)");
  }
}

}  // namespace
}  // namespace staticlm::cpu

namespace staticlm::cpu {
namespace {

TEST(Matmul, ThreadPoolGivesIdenticalResults) {
  const std::int64_t n = 5, in = 300, out = 517;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const Tensor w = make_weight(dt, out, in);
    std::vector<float> x(n * in);
    for (std::int64_t i = 0; i < n * in; ++i) x[i] = static_cast<float>(std::sin(0.3 * i));
    std::vector<float> a(n * out), b(n * out, -1.0f);
    matmul(x.data(), n, weight_matrix(w.view(), "w"), a.data());
    ThreadPool pool(3);
    matmul(x.data(), n, weight_matrix(w.view(), "w"), b.data(), &pool);
    EXPECT_EQ(a, b);
  }
}

// q, k and v in one parallel loop give what three matmul() calls give, bit for bit, on every
// target, for bf16 and q8 weights (the VNNI path prepares x once for all three), decode and
// prefill rows; mixed dtypes fall back to separate calls.
TEST(Matmul, SameInputEqualsSeparateCalls) {
  ThreadPool pool(2);
  const std::string saved = kernel_target();
  const std::int64_t in = 128;
  const std::int64_t sizes[3] = {48, 16, 16};
  std::vector<Tensor> bf16;
  std::vector<std::vector<std::int8_t>> q8(3);
  std::vector<std::vector<float>> s8(3);
  std::vector<WeightMatrix> wb, wq;
  for (int i = 0; i < 3; ++i) {
    bf16.push_back(make_weight(DType::kBF16, sizes[i], in));
    wb.push_back(weight_matrix(bf16.back().view(), "w"));
    std::vector<float> f(static_cast<std::size_t>(sizes[i] * in));
    for (std::int64_t j = 0; j < sizes[i] * in; ++j) f[j] = value(j / in + i, j % in) * 0.01f;
    q8[i].resize(f.size());
    s8[i].resize(static_cast<std::size_t>(sizes[i]));
    quant::quantize_q8(f, sizes[i], in, q8[i], s8[i]);
    WeightMatrix w{DType::kI8, sizes[i], in, q8[i].data()};
    w.scales = s8[i].data();
    wq.push_back(w);
  }
  std::vector<WeightMatrix> mixed = {wq[0], wb[1], wq[2]};
  for (const std::string& t : kernel_targets()) {
    select_kernel_target(t);
    for (const auto* set : {&wb, &wq, &mixed}) {
      for (std::int64_t n : {1, 2, 5}) {
        std::vector<float> x(static_cast<std::size_t>(n * in));
        for (std::int64_t i = 0; i < n * in; ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
        std::vector<std::vector<float>> fused(3), separate(3);
        std::vector<MatmulOut> outs;
        for (int i = 0; i < 3; ++i) {
          fused[i].assign(static_cast<std::size_t>(n * sizes[i]), NAN);
          separate[i].assign(static_cast<std::size_t>(n * sizes[i]), NAN);
          outs.push_back({&(*set)[i], fused[i].data()});
          matmul(x.data(), n, (*set)[i], separate[i].data(), &pool);
        }
        matmul_same_input(x.data(), n, outs, &pool);
        for (int i = 0; i < 3; ++i) EXPECT_EQ(fused[i], separate[i]) << t << " n=" << n << " matrix " << i;
      }
    }
  }
  select_kernel_target(saved);
}

}  // namespace
}  // namespace staticlm::cpu
