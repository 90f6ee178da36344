#include "runtime/static_inputs.h"

#include <gtest/gtest.h>

#include "error_matchers.h"
#include "runtime/static_inputs_check.h"

namespace staticlm {
namespace {

constexpr std::int64_t kBoi = 255999, kImage = 258880, kEoi = 258882;

Tensor i64_row(const std::vector<std::int64_t>& v) {
  Tensor t(DType::kI64, Shape{1, static_cast<std::int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.as<std::int64_t>().begin());
  return t;
}

std::vector<std::int64_t> row(const Tensor& t) {
  auto s = t.as<std::int64_t>();
  return {s.begin(), s.end()};
}

std::vector<int> flags(const Tensor& t) {
  std::vector<int> v;
  for (std::uint8_t b : t.as<std::uint8_t>()) v.push_back(b);
  return v;
}

// The processor output for "<|image|>Describe the image." under e2b_66x36_264, built by hand:
// <|image>, 264 placeholders, <image|>, then text ids; pixel values with a recognisable pattern.
ProcessorBatch e2b_batch(const VisionProfile& p, const std::vector<std::int64_t>& text = {82858, 506, 2471, 236761}) {
  std::vector<std::int64_t> ids = {kBoi};
  ids.insert(ids.end(), static_cast<std::size_t>(p.num_visual_tokens), kImage);
  ids.push_back(kEoi);
  ids.insert(ids.end(), text.begin(), text.end());
  ProcessorBatch b;
  b.input_ids = i64_row(ids);
  b.attention_mask = Tensor(DType::kI64, b.input_ids.shape());
  for (auto& v : b.attention_mask->as<std::int64_t>()) v = 1;
  b.pixel_values = Tensor(DType::kF32, Shape{1, p.num_patches(), p.patch_vector_size()});
  auto px = b.pixel_values->as<float>();
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = static_cast<float>(i % 255) / 255.0f;
  b.image_position_ids = p.image_position_ids();
  b.num_soft_tokens_per_image = {p.num_visual_tokens};
  return b;
}

StaticInputOptions options(const VisionProfile& p, std::int64_t max_seq) {
  StaticInputOptions o;
  o.profile = p;
  o.layout = p.layout(max_seq);
  o.pad_token_id = 0;
  o.image_token_id = kImage;
  return o;
}

const VisionProfile& e2b() { return registered_vision_profile(kDefaultVisionProfile); }

// TICO's TestBuildStaticInputs.test_uses_layout_max_seq: ids [7, 99, 99, 8], image id 99,
// max_seq 8 -> [7, 0, 0, 8, 0, 0, 0, 0]. (Its fake profile accepted anything; here a real
// 1x2-patch profile with patch 2 and k 1 matches the fake's pixel [1, 8, 12].)
TEST(BuildStaticInputs, TicoFakeProcessorCase) {
  const VisionProfile p{"fake", 1, 2, 8, 1, 2, 2, 1, 1, false};
  ProcessorBatch b;
  b.input_ids = i64_row({7, 99, 99, 8});
  b.attention_mask = Tensor(DType::kI64, Shape{1, 4});
  for (auto& v : b.attention_mask->as<std::int64_t>()) v = 1;
  b.pixel_values = Tensor(DType::kF32, Shape{1, 8, 12});
  b.image_position_ids = p.image_position_ids();
  StaticInputOptions o = options(p, 8);
  o.image_token_id = 99;
  const StaticInputs s = build_static_inputs(b, o);
  EXPECT_EQ(s.llm_input_ids.shape(), (Shape{1, 8}));
  EXPECT_EQ(s.attention_mask.shape(), (Shape{1, 8}));
  EXPECT_EQ(row(s.llm_input_ids), (std::vector<std::int64_t>{7, 0, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(flags(s.attention_mask), (std::vector<int>{1, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(s.length(), 4);
}

TEST(BuildStaticInputs, E2bImagePrompt) {
  const ProcessorBatch b = e2b_batch(e2b());
  const StaticInputs s = build_static_inputs(b, options(e2b(), 2048));
  const std::int64_t t = 1 + 264 + 1 + 4;
  ASSERT_EQ(s.length(), t);
  ASSERT_EQ(s.llm_input_ids.shape(), (Shape{1, 2048}));
  ASSERT_EQ(s.llm_input_ids.dtype(), DType::kI64);
  ASSERT_EQ(s.attention_mask.dtype(), DType::kBool);
  ASSERT_EQ(s.valid_length.shape(), (Shape{1}));
  const auto llm = s.llm_input_ids.as<std::int64_t>();
  EXPECT_EQ(llm[0], kBoi);
  for (int i = 1; i < 265; ++i) ASSERT_EQ(llm[i], 0) << "placeholder slot " << i;
  EXPECT_EQ(llm[265], kEoi);
  EXPECT_EQ(llm[266], 82858);
  EXPECT_EQ(llm[269], 236761);
  for (int i = 270; i < 2048; ++i) ASSERT_EQ(llm[i], 0) << "padding slot " << i;
  const auto mask = s.attention_mask.as<std::uint8_t>();
  for (int i = 0; i < 2048; ++i) ASSERT_EQ(mask[i], i < t ? 1 : 0) << i;
  // Raw ids keep the placeholders.
  EXPECT_EQ(s.raw_input_ids.shape(), (Shape{1, t}));
  EXPECT_EQ(s.raw_input_ids.as<std::int64_t>()[1], kImage);
  EXPECT_EQ(s.raw_input_ids.as<std::int64_t>()[264], kImage);
  ASSERT_TRUE(s.has_image());
  EXPECT_EQ(s.pixel_values->shape(), (Shape{1, 2520, 768}));
  EXPECT_EQ(s.pixel_values->as<float>()[300], 45.0f / 255.0f);
  EXPECT_EQ(s.image_position_ids->shape(), (Shape{1, 2520, 2}));
  EXPECT_EQ(s.image_position_ids->as<std::int64_t>()[2 * 67], 1);  // patch 67 = (x 1, y 1)
}

TEST(BuildStaticInputs, TextOnlyPrompt) {
  ProcessorBatch b;
  b.input_ids = i64_row({2, 105, 2364, 107, 9259});
  StaticInputOptions o = options(e2b(), 16);
  o.layout = StaticLayout{16, 0, 0, 1};
  const StaticInputs s = build_static_inputs(b, o);
  EXPECT_EQ(row(s.llm_input_ids), (std::vector<std::int64_t>{2, 105, 2364, 107, 9259, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(s.length(), 5);
  EXPECT_FALSE(s.has_image());
  EXPECT_FALSE(s.image_position_ids.has_value());
}

TEST(BuildStaticInputs, ValidMaskFromPadIdWhenNoAttentionMask) {
  // No attention mask: trailing pad ids (0) are padding, so T = 3.
  ProcessorBatch b;
  b.input_ids = i64_row({2, 5, 6, 0, 0});
  StaticInputOptions o = options(e2b(), 8);
  o.layout = StaticLayout{8, 0, 0, 1};
  const StaticInputs s = build_static_inputs(b, o);
  EXPECT_EQ(s.length(), 3);
  EXPECT_EQ(flags(s.attention_mask), (std::vector<int>{1, 1, 1, 0, 0, 0, 0, 0}));
  // With no pad id either, every token is valid, but padding then has no id to use.
  o.pad_token_id.reset();
  EXPECT_ERROR_WITH(build_static_inputs(b, o), "text_config.pad_token_id is required");
}

TEST(BuildStaticInputs, ProcessorPaddingIsDropped) {
  ProcessorBatch b;
  b.input_ids = i64_row({2, 5, 6, 1, 1});
  b.attention_mask = Tensor(DType::kBool, Shape{1, 5});
  for (int i = 0; i < 3; ++i) b.attention_mask->as<std::uint8_t>()[i] = 1;
  StaticInputOptions o = options(e2b(), 6);
  o.layout = StaticLayout{6, 0, 0, 1};
  const StaticInputs s = build_static_inputs(b, o);
  EXPECT_EQ(row(s.llm_input_ids), (std::vector<std::int64_t>{2, 5, 6, 0, 0, 0}));
  EXPECT_EQ(s.length(), 3);
}

// --- one test per error ---

TEST(BuildStaticInputsErrors, AttentionMaskShape) {
  ProcessorBatch b = e2b_batch(e2b());
  b.attention_mask = Tensor(DType::kI64, Shape{1, 3});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "attention_mask shape [1, 3] does not match input_ids shape [1, 270]");
}

TEST(BuildStaticInputsErrors, GapInValidMask) {
  ProcessorBatch b;
  b.input_ids = i64_row({2, 5, 7, 9});
  b.attention_mask = i64_row({1, 1, 0, 1});  // the #828 review's case
  StaticInputOptions o = options(e2b(), 8);
  o.layout = StaticLayout{8, 0, 0, 1};
  EXPECT_ERROR_WITH(build_static_inputs(b, o), "Right padding expected but not found", "position 3 after padding at position 2");
}

TEST(BuildStaticInputsErrors, LeftPadding) {
  StaticInputOptions o = options(e2b(), 2048);
  o.padding_side = "left";
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(e2b()), o), "Unsupported padding_side 'left'", "only 'right'");
}

TEST(BuildStaticInputsErrors, LongerThanMaxSq) {
  const VisionProfile& p = e2b();
  EXPECT_NO_THROW(build_static_inputs(e2b_batch(p), options(p, 270)));
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(p), options(p, 269)), "Input sequence length T=270 exceeds max_seq 269");
}

TEST(BuildStaticInputsErrors, NoDecodeSlot) {
  StaticInputOptions o = options(e2b(), 270);
  o.reserve_decode_slot = true;
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(e2b()), o), "Input sequence length T=270 leaves no decode slot",
                    "max_seq 270", "at most max_seq - 1 = 269 tokens");
  o = options(e2b(), 271);
  o.reserve_decode_slot = true;
  EXPECT_EQ(build_static_inputs(e2b_batch(e2b()), o).length(), 270);
}

TEST(BuildStaticInputsErrors, ImageTokenIdRequired) {
  StaticInputOptions o = options(e2b(), 2048);
  o.image_token_id.reset();
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(e2b()), o), "config.image_token_id is required", "top-level");
}

TEST(BuildStaticInputsErrors, StaleVisualStart) {
  // The profile says the span starts at 2 (a stale visual_start_idx); the processor put it at 1.
  VisionProfile stale = e2b();
  stale.visual_start_idx = 2;
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(e2b()), options(stale, 2048)), "expected [2, 266), got [1, 265) (264 tokens)",
                    "starts at 1, not at visual_start_idx 2");
}

TEST(BuildStaticInputsErrors, OtherProfilesSpan) {
  // A batch for e2b_66x36_264 checked against e2b_57x42_266: 264 placeholders, not 266.
  const VisionProfile& other = registered_vision_profile("e2b_57x42_266");
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(e2b()), options(other, 2048)), "vision profile 'e2b_57x42_266'",
                    "264 image tokens, not num_visual_tokens 266");
}

TEST(BuildStaticInputsErrors, StrayPlaceholder) {
  ProcessorBatch b = e2b_batch(e2b(), {82858, kImage, 2471});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "265 image tokens", "not contiguous");
}

TEST(BuildStaticInputsErrors, TwoImages) {
  // What the processor gives for two images: two spans, pixel batch 2.
  ProcessorBatch b = e2b_batch(e2b(), {kBoi});
  std::vector<std::int64_t> ids = row(b.input_ids);
  ids.insert(ids.end(), 264, kImage);
  ids.push_back(kEoi);
  b.input_ids = i64_row(ids);
  b.attention_mask.reset();
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "528 image tokens, not num_visual_tokens 264");
}

TEST(BuildStaticInputsErrors, PixelShape) {
  ProcessorBatch b = e2b_batch(e2b());
  b.pixel_values = Tensor(DType::kF32, Shape{1, 2520, 588});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "pixel_values shape [1, 2520, 588] does not match the profile's [1, 2520, 768]");
  b.pixel_values = Tensor(DType::kF16, Shape{1, 2520, 768});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "pixel_values must be F32, got F16");
}

TEST(BuildStaticInputsErrors, PositionIdsOfAnotherGrid) {
  ProcessorBatch b = e2b_batch(e2b());
  b.image_position_ids = registered_vision_profile("e2b_57x42_266").image_position_ids();
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "image_position_ids (I64) do not match the canonical ones",
                    "expected_valid_patches=2376", "actual_valid_patches=2394", "expected_sha256=245f8e68");
}

TEST(BuildStaticInputsErrors, MissingImageTensors) {
  ProcessorBatch b = e2b_batch(e2b());
  b.pixel_values.reset();
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "has image_position_ids but no pixel_values");
  b = e2b_batch(e2b());
  b.image_position_ids.reset();
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "has pixel_values but no image_position_ids");
}

TEST(BuildStaticInputsErrors, SoftTokenCount) {
  ProcessorBatch b = e2b_batch(e2b());
  b.num_soft_tokens_per_image = {266};
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "num_soft_tokens_per_image is [266]; expected [264]");
}

TEST(BuildStaticInputsErrors, PlaceholderWithoutImage) {
  ProcessorBatch b;
  b.input_ids = i64_row({2, 5, kImage, 6});
  StaticInputOptions o = options(e2b(), 8);
  o.layout = StaticLayout{8, 0, 0, 1};
  EXPECT_ERROR_WITH(build_static_inputs(b, o), "image placeholder (id 258880) at position 2 but no image was given");
}

TEST(BuildStaticInputsErrors, LayoutDisagreesWithProfile) {
  StaticInputOptions o = options(e2b(), 2048);
  o.layout.num_visual_tokens = 266;
  EXPECT_ERROR_WITH(build_static_inputs(e2b_batch(e2b()), o), "static layout span [1, 267) differs from vision profile 'e2b_66x36_264' span [1, 265)");
}

TEST(BuildStaticInputsErrors, BadIdsTensor) {
  ProcessorBatch b;
  b.input_ids = Tensor(DType::kI64, Shape{2, 3});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "input_ids must be [1, T] (batch 1), got [2, 3]");
  b.input_ids = Tensor(DType::kI32, Shape{1, 3});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "input_ids must be I64, got I32");
  b.input_ids = Tensor(DType::kI64, Shape{1, 0});
  EXPECT_ERROR_WITH(build_static_inputs(b, options(e2b(), 2048)), "no valid tokens");
}

// --- side-by-side step 1 ---

std::vector<std::string> failed(const std::vector<InputCheck>& checks) {
  std::vector<std::string> names;
  for (const InputCheck& c : checks) {
    if (!c.passed) names.push_back(c.name);
  }
  return names;
}

TEST(StaticInputsCheck, AllSubChecksPassOnBuilderOutput) {
  const ProcessorBatch b = e2b_batch(e2b());
  const StaticInputs s = build_static_inputs(b, options(e2b(), 512));
  const auto checks = check_static_inputs(s, b, 512, 0, kImage);
  ASSERT_EQ(checks.size(), 6u);
  const char* names[] = {"llm_input_ids", "attention_mask", "pixel_values", "image_position_ids", "valid_length", "padding"};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(checks[i].name, names[i]);
    EXPECT_TRUE(checks[i].passed) << checks[i].name << ": " << checks[i].detail;
  }
  EXPECT_TRUE(all_passed(checks));
  EXPECT_EQ(checks[5].detail, "242 slots past T hold the pad id 0");
}

TEST(StaticInputsCheck, EachCorruptionIsNamed) {
  const ProcessorBatch b = e2b_batch(e2b());
  const StaticInputs good = build_static_inputs(b, options(e2b(), 512));

  StaticInputs s = good;
  s.llm_input_ids.as<std::int64_t>()[7] = kImage;  // a placeholder left in place
  auto c = check_static_inputs(s, b, 512, 0, kImage);
  EXPECT_EQ(failed(c), (std::vector<std::string>{"llm_input_ids"}));
  EXPECT_EQ(c[0].detail, "element 7 is 258880, expected 0");

  s = good;
  s.attention_mask.as<std::uint8_t>()[270] = 1;
  EXPECT_EQ(failed(check_static_inputs(s, b, 512, 0, kImage)), (std::vector<std::string>{"attention_mask"}));

  s = good;
  s.pixel_values->as<float>()[1000] += 1e-7f;
  EXPECT_EQ(failed(check_static_inputs(s, b, 512, 0, kImage)), (std::vector<std::string>{"pixel_values"}));

  s = good;
  s.image_position_ids->as<std::int64_t>()[2 * 2400] = 5;
  EXPECT_EQ(failed(check_static_inputs(s, b, 512, 0, kImage)), (std::vector<std::string>{"image_position_ids"}));

  s = good;
  s.valid_length.as<std::int64_t>()[0] = 271;
  EXPECT_EQ(failed(check_static_inputs(s, b, 512, 0, kImage)), (std::vector<std::string>{"valid_length"}));

  s = good;
  s.llm_input_ids.as<std::int64_t>()[400] = 1;  // garbage past T: both the layout and the padding check see it
  c = check_static_inputs(s, b, 512, 0, kImage);
  EXPECT_EQ(failed(c), (std::vector<std::string>{"llm_input_ids", "padding"}));
  EXPECT_EQ(c[5].detail, "slot 400 past T=270 holds 1, not the pad id 0");

  s = good;
  s.pixel_values.reset();
  s.image_position_ids.reset();
  c = check_static_inputs(s, b, 512, 0, kImage);
  EXPECT_EQ(failed(c), (std::vector<std::string>{"pixel_values", "image_position_ids"}));
  EXPECT_EQ(c[3].detail, "presence mismatch: runtime=false, reference=true");

  // A runtime built for another max_seq has the wrong shape.
  const StaticInputs longer = build_static_inputs(b, options(e2b(), 600));
  c = check_static_inputs(longer, b, 512, 0, kImage);
  EXPECT_EQ(failed(c), (std::vector<std::string>{"llm_input_ids", "attention_mask"}));
  EXPECT_EQ(c[0].detail, "shape [1, 600], expected [1, 512]");
}

TEST(StaticInputsCheck, TextOnly) {
  ProcessorBatch b;
  b.input_ids = i64_row({2, 105, 2364});
  StaticInputOptions o = options(e2b(), 8);
  o.layout = StaticLayout{8, 0, 0, 1};
  const auto c = check_static_inputs(build_static_inputs(b, o), b, 8, 0, kImage);
  EXPECT_TRUE(all_passed(c));
  EXPECT_EQ(c[2].detail, "absent on both sides (text-only prompt)");
}

}  // namespace
}  // namespace staticlm
