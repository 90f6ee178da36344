// Mirrors TICO's test_static_gemma4_runtime_helpers.py (TestNormalizeValidTokenMask and
// TestValidatePaddingLayout, case for case), plus the layouts from the #828 review.
#include "runtime/valid_mask.h"

#include <gtest/gtest.h>

#include <vector>

#include "error_matchers.h"

namespace staticlm {
namespace {

Tensor i64(std::vector<std::vector<std::int64_t>> rows) {
  Tensor t(DType::kI64, Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())});
  std::size_t k = 0;
  for (const auto& r : rows) {
    for (std::int64_t v : r) t.as<std::int64_t>()[k++] = v;
  }
  return t;
}

Tensor boolean(std::vector<std::vector<int>> rows) {
  Tensor t(DType::kBool, Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())});
  std::size_t k = 0;
  for (const auto& r : rows) {
    for (int v : r) t.as<std::uint8_t>()[k++] = static_cast<std::uint8_t>(v);
  }
  return t;
}

std::vector<int> values(const Tensor& t) {
  std::vector<int> v;
  for (std::uint8_t b : t.as<std::uint8_t>()) v.push_back(b);
  return v;
}

// --- _normalize_valid_token_mask ---

TEST(NormalizeValidTokenMask, WithAttentionMask) {
  const Tensor ids = i64({{1, 2, 3, 0, 0}});
  const Tensor mask = i64({{1, 1, 1, 0, 0}});
  const TensorView mv = mask.view();
  const Tensor r = normalize_valid_token_mask(ids.view(), &mv, 0);
  EXPECT_EQ(r.dtype(), DType::kBool);
  EXPECT_EQ(r.shape(), (Shape{1, 5}));
  EXPECT_EQ(values(r), (std::vector<int>{1, 1, 1, 0, 0}));
}

TEST(NormalizeValidTokenMask, WithoutAttentionMaskUsesPadTokenId) {
  const Tensor ids = i64({{1, 2, 3, 0, 0}});
  EXPECT_EQ(values(normalize_valid_token_mask(ids.view(), nullptr, 0)), (std::vector<int>{1, 1, 1, 0, 0}));
  // Another pad id marks other positions.
  EXPECT_EQ(values(normalize_valid_token_mask(ids.view(), nullptr, 2)), (std::vector<int>{1, 0, 1, 1, 1}));
}

TEST(NormalizeValidTokenMask, WithoutAttentionMaskNoPadTokenId) {
  const Tensor ids = i64({{1, 2, 3, 0, 0}});
  EXPECT_EQ(values(normalize_valid_token_mask(ids.view(), nullptr, std::nullopt)), (std::vector<int>{1, 1, 1, 1, 1}));
}

TEST(NormalizeValidTokenMask, ShapeMismatchRaises) {
  const Tensor ids = i64({{1, 2, 3}});
  const Tensor mask = i64({{1, 0}});
  const TensorView mv = mask.view();
  EXPECT_ERROR_WITH(normalize_valid_token_mask(ids.view(), &mv, 0),
                    "attention_mask shape [1, 2] does not match input_ids shape [1, 3]");
}

TEST(NormalizeValidTokenMask, BatchedInput) {
  const Tensor ids = i64({{1, 2, 0, 0}, {3, 4, 5, 6}});
  const Tensor mask = i64({{1, 1, 0, 0}, {1, 1, 1, 1}});
  const TensorView mv = mask.view();
  const Tensor r = normalize_valid_token_mask(ids.view(), &mv, 0);
  EXPECT_EQ(r.shape(), (Shape{2, 4}));
  EXPECT_EQ(values(r), (std::vector<int>{1, 1, 0, 0, 1, 1, 1, 1}));
}

// The attention mask wins over the pad id: a pad-id token the processor marks valid stays valid.
TEST(NormalizeValidTokenMask, AttentionMaskTakesPrecedence) {
  const Tensor ids = i64({{5, 0, 7}});
  const Tensor mask = boolean({{1, 1, 1}});
  const TensorView mv = mask.view();
  EXPECT_EQ(values(normalize_valid_token_mask(ids.view(), &mv, 0)), (std::vector<int>{1, 1, 1}));
}

// --- _validate_padding_layout ---

TEST(ValidatePaddingLayout, RightPaddingValid) {
  EXPECT_NO_THROW(validate_padding_layout(boolean({{1, 1, 1, 0, 0}}).view(), "right"));
}

TEST(ValidatePaddingLayout, RightPaddingNoPadding) {
  EXPECT_NO_THROW(validate_padding_layout(boolean({{1, 1, 1}}).view(), "right"));
}

TEST(ValidatePaddingLayout, RightPaddingInvalid) {
  EXPECT_ERROR_WITH(validate_padding_layout(boolean({{1, 0, 1, 0, 0}}).view(), "right"), "Right padding expected",
                    "row 0 has a valid token at position 2 after padding at position 1");
}

TEST(ValidatePaddingLayout, UnsupportedPaddingSideRaises) {
  ErrorKind kind{};
  const std::string msg =
      test::error_message([] { validate_padding_layout(boolean({{1, 1, 1, 0, 0}}).view(), "left"); }, &kind);
  EXPECT_NE(msg.find("Unsupported padding_side 'left'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("only 'right' padding is supported"), std::string::npos) << msg;
  EXPECT_EQ(kind, ErrorKind::kUnsupported);
}

TEST(ValidatePaddingLayout, BatchedRightPaddingValid) {
  EXPECT_NO_THROW(validate_padding_layout(boolean({{1, 1, 0, 0}, {1, 1, 1, 0}}).view(), "right"));
}

TEST(ValidatePaddingLayout, BatchedRightPaddingInvalid) {
  EXPECT_ERROR_WITH(validate_padding_layout(boolean({{1, 1, 0, 0}, {1, 0, 1, 0}}).view(), "right"),
                    "Right padding expected", "row 1 has a valid token at position 2 after padding at position 1");
}

// The #828 review: the check must look at everything after the first padding slot, not only at
// the slot right after the valid run, and not only at the last slot.
TEST(ValidatePaddingLayout, ReviewCases) {
  EXPECT_ERROR_WITH(validate_padding_layout(boolean({{1, 1, 0, 1}}).view(), "right"),
                    "valid token at position 3 after padding at position 2");
  EXPECT_ERROR_WITH(validate_padding_layout(boolean({{1, 1, 0, 0, 1}}).view(), "right"),
                    "valid token at position 4 after padding at position 2");
  EXPECT_ERROR_WITH(validate_padding_layout(boolean({{0, 1, 1, 1}}).view(), "right"),
                    "valid token at position 1 after padding at position 0");  // left padding
  EXPECT_NO_THROW(validate_padding_layout(boolean({{0, 0, 0}}).view(), "right"));  // all padding
  EXPECT_NO_THROW(validate_padding_layout(boolean({{1}}).view(), "right"));
  // A U8 mask works like a BOOL one.
  Tensor u8(DType::kU8, Shape{1, 4});
  u8.as<std::uint8_t>()[0] = 1;
  u8.as<std::uint8_t>()[2] = 7;
  EXPECT_ERROR_WITH(validate_padding_layout(u8.view(), "right"), "position 2 after padding at position 1");
}

TEST(ValidatePaddingLayout, SideIsCheckedFirstAndNamed) {
  EXPECT_ERROR_WITH(check_padding_side("middle", "cfg.yaml: padding_side"),
                    "cfg.yaml: padding_side: Unsupported padding_side 'middle'");
  EXPECT_NO_THROW(check_padding_side("right"));
}

TEST(NormalizeValidTokenMask, RefusesFloatMaskAndBadRank) {
  const Tensor ids = i64({{1, 2}});
  Tensor f(DType::kF32, Shape{1, 2});
  const TensorView fv = f.view();
  EXPECT_ERROR_WITH(normalize_valid_token_mask(ids.view(), &fv, 0), "attention_mask must be an integer or boolean tensor, got F32");
  Tensor flat(DType::kI64, Shape{3});
  EXPECT_ERROR_WITH(normalize_valid_token_mask(flat.view(), nullptr, 0), "input_ids must be [batch, seq], got shape [3]");
}

}  // namespace
}  // namespace staticlm
