#include "runtime/static_profile.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "error_matchers.h"
#include "test_util.h"

namespace staticlm {
namespace {

// sha256 of the canonical position ids, computed by tests/fixtures/static/make_profile_fixtures.py
// (Python's hashlib over struct-packed int64s, independent of this code).
std::string fixture_sha256(const std::string& profile) {
  const auto j = nlohmann::json::parse(read_file(test::fixture("static/" + profile + ".vision_profile.json")));
  return j.at("image_position_ids_sha256").get<std::string>();
}

VisionProfile tiny_profile() {
  // The fixture's tiny_18x12_24: 12x18 patches, k=3 -> 4x6 = 24 soft tokens, 30 * 9 = 270 patches.
  return VisionProfile{"tiny_18x12_24", 3, 24, 30, 12, 18, 16, 3, 1, false};
}

TEST(StaticProfile, DefaultProfileAndDerivedValues) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  EXPECT_EQ(p.name, "e2b_66x36_264");
  // spec/static-runtime.md (a): image 576x1056, soft grid 12x22 = 264, 2520 = 2376 + 144 patches.
  EXPECT_EQ(p.visual_start_idx, 1);
  EXPECT_EQ(p.num_visual_tokens, 264);
  EXPECT_EQ(p.num_valid_patches(), 2376);
  EXPECT_EQ(p.num_patches(), 2520);
  EXPECT_EQ(p.num_padding_patches(), 144);
  EXPECT_EQ(p.soft_grid_height(), 12);
  EXPECT_EQ(p.soft_grid_width(), 22);
  EXPECT_EQ(p.image_height(), 576);
  EXPECT_EQ(p.image_width(), 1056);
  EXPECT_EQ(p.patch_vector_size(), 768);
  EXPECT_EQ(p.visual_end_idx(), 265);
  EXPECT_FALSE(p.tokenizer_add_bos_token);
  EXPECT_NO_THROW(p.validate());
}

TEST(StaticProfile, SecondRegisteredProfile) {
  const VisionProfile& p = registered_vision_profile("e2b_57x42_266");
  EXPECT_EQ(p.image_height(), 672);
  EXPECT_EQ(p.image_width(), 912);
  EXPECT_EQ(p.soft_grid_height() * p.soft_grid_width(), 266);
  EXPECT_EQ(p.num_patches(), 2520);
  EXPECT_EQ(p.num_valid_patches(), 42 * 57);
  EXPECT_EQ(registered_vision_profiles().size(), 2u);
  EXPECT_TRUE(is_registered_vision_profile("e2b_57x42_266"));
  EXPECT_FALSE(is_registered_vision_profile("e2b_1x1_1"));
}

TEST(StaticProfile, UnknownProfileListsRegisteredOnes) {
  EXPECT_ERROR_WITH(registered_vision_profile("e2b_64x64_256"), "unknown vision profile 'e2b_64x64_256'",
                    "e2b_66x36_264", "e2b_57x42_266");
}

TEST(StaticProfile, CanonicalPositionIds) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  const Tensor ids = p.image_position_ids();
  ASSERT_EQ(ids.shape(), (Shape{1, 2520, 2}));
  ASSERT_EQ(ids.dtype(), DType::kI64);
  auto v = ids.as<std::int64_t>();
  auto at = [&](int i) { return std::make_pair(v[2 * i], v[2 * i + 1]); };
  EXPECT_EQ(at(0), std::make_pair(std::int64_t{0}, std::int64_t{0}));
  EXPECT_EQ(at(1), std::make_pair(std::int64_t{1}, std::int64_t{0}));     // x first
  EXPECT_EQ(at(65), std::make_pair(std::int64_t{65}, std::int64_t{0}));   // end of row 0
  EXPECT_EQ(at(66), std::make_pair(std::int64_t{0}, std::int64_t{1}));    // row 1
  EXPECT_EQ(at(2375), std::make_pair(std::int64_t{65}, std::int64_t{35}));  // last valid patch
  EXPECT_EQ(at(2376), std::make_pair(std::int64_t{-1}, std::int64_t{-1}));  // first padding patch
  EXPECT_EQ(at(2519), std::make_pair(std::int64_t{-1}, std::int64_t{-1}));
}

TEST(StaticProfile, PositionIdsSha256MatchesPythonFixtures) {
  for (const char* name : {"e2b_66x36_264", "e2b_57x42_266"}) {
    EXPECT_EQ(registered_vision_profile(name).position_ids_sha256(), fixture_sha256(name)) << name;
  }
  EXPECT_EQ(tiny_profile().position_ids_sha256(), fixture_sha256("tiny_18x12_24"));
  // The two profiles must not share a fingerprint.
  EXPECT_NE(fixture_sha256("e2b_66x36_264"), fixture_sha256("e2b_57x42_266"));
}

// One test per validation rule of spec (a); each message names the field, the value and the rule.
TEST(StaticProfileValidate, EmptyName) {
  VisionProfile p = tiny_profile();
  p.name = "";
  EXPECT_ERROR_WITH(p.validate(), "name is empty");
}

TEST(StaticProfileValidate, BatchSize) {
  VisionProfile p = tiny_profile();
  p.batch_size = 2;
  EXPECT_ERROR_WITH(p.validate(), "'tiny_18x12_24'", "batch_size is 2", "only batch_size 1");
}

TEST(StaticProfileValidate, EveryCountAndSizeMustBePositive) {
  const std::pair<const char*, std::int64_t VisionProfile::*> fields[] = {
      {"num_visual_tokens", &VisionProfile::num_visual_tokens}, {"max_soft_tokens", &VisionProfile::max_soft_tokens},
      {"patch_grid_height", &VisionProfile::patch_grid_height}, {"patch_grid_width", &VisionProfile::patch_grid_width},
      {"patch_size", &VisionProfile::patch_size},               {"pooling_kernel_size", &VisionProfile::pooling_kernel_size}};
  for (const auto& [name, member] : fields) {
    for (std::int64_t bad : {0, -3}) {
      VisionProfile p = tiny_profile();
      p.*member = bad;
      const std::string expected = std::string(name) + " is " + std::to_string(bad) + "; it must be positive";
      EXPECT_ERROR_WITH(p.validate(), expected.c_str());
    }
  }
}

TEST(StaticProfileValidate, NegativeStart) {
  VisionProfile p = tiny_profile();
  p.visual_start_idx = -1;
  EXPECT_ERROR_WITH(p.validate(), "visual_start_idx is -1", "non-negative");
}

TEST(StaticProfileValidate, GridNotDivisibleByKernel) {
  VisionProfile p = tiny_profile();
  p.patch_grid_height = 13;
  EXPECT_ERROR_WITH(p.validate(), "patch_grid_height 13 is not divisible by pooling_kernel_size 3");
  p = tiny_profile();
  p.patch_grid_width = 20;
  EXPECT_ERROR_WITH(p.validate(), "patch_grid_width 20 is not divisible by pooling_kernel_size 3");
}

TEST(StaticProfileValidate, MoreVisualTokensThanSoftTokens) {
  VisionProfile p = tiny_profile();
  p.max_soft_tokens = 20;
  EXPECT_ERROR_WITH(p.validate(), "num_visual_tokens 24 exceeds max_soft_tokens 20");
}

TEST(StaticProfileValidate, VisualTokensMustEqualPooledGrid) {
  VisionProfile p = tiny_profile();
  p.num_visual_tokens = 25;
  EXPECT_ERROR_WITH(p.validate(), "num_visual_tokens is 25", "12x18 / 3 gives 4x6 = 24");
}

TEST(StaticProfileValidate, SpanMustFitMaxSeq) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  EXPECT_NO_THROW(p.validate_for_model(265, nullptr));
  EXPECT_ERROR_WITH(p.validate_for_model(264, nullptr), "visual span [1, 265) does not fit in max_seq 264");
}

TEST(StaticProfileValidate, VisionConfigMustAgree) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  VisionConfig v;  // E2B defaults: patch 16, pooling 3, 280 soft tokens
  EXPECT_NO_THROW(p.validate_for_model(2048, &v));
  v.patch_size = 14;
  EXPECT_ERROR_WITH(p.validate_for_model(2048, &v), "patch_size 16 does not match", "vision_config.patch_size 14");
  v = VisionConfig{};
  v.pooling_kernel_size = 4;
  EXPECT_ERROR_WITH(p.validate_for_model(2048, &v), "pooling_kernel_size 3 does not match",
                    "vision_config.pooling_kernel_size 4");
  v = VisionConfig{};
  v.default_output_length = 560;
  EXPECT_ERROR_WITH(p.validate_for_model(2048, &v), "max_soft_tokens 280 does not match",
                    "vision_config.default_output_length 560");
}

TEST(StaticProfileValidate, TokenizerAddBos) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  EXPECT_NO_THROW(p.validate_tokenizer_add_bos(false));
  EXPECT_ERROR_WITH(p.validate_tokenizer_add_bos(true), "tokenizer_add_bos_token is false",
                    "tokenizer's add_bos_token is true");
}

TEST(StaticProfileValidate, ProcessorSettings) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  EXPECT_NO_THROW(p.validate_processor(ProcessorSettings{}));
  EXPECT_NO_THROW(p.validate_processor(ProcessorSettings{false, 16, 3, 280, 280}));
  EXPECT_ERROR_WITH(p.validate_processor(ProcessorSettings{true, {}, {}, {}, {}}), "tokenizer's add_bos_token is true");
  EXPECT_ERROR_WITH(p.validate_processor(ProcessorSettings{{}, 14, {}, {}, {}}),
                    "the image processor's patch_size is 14 but the profile's is 16");
  EXPECT_ERROR_WITH(p.validate_processor(ProcessorSettings{{}, {}, 2, {}, {}}),
                    "the image processor's pooling_kernel_size is 2 but the profile's is 3");
  EXPECT_ERROR_WITH(p.validate_processor(ProcessorSettings{{}, {}, {}, 560, {}}),
                    "the image processor's max_soft_tokens is 560 but the profile's is 280");
  EXPECT_ERROR_WITH(p.validate_processor(ProcessorSettings{{}, {}, {}, {}, 256}),
                    "the processor's image_seq_length is 256 but the profile's max_soft_tokens is 280");
}

TEST(StaticLayout, Rules) {
  StaticLayout ok{2048, 1, 264, 1};
  EXPECT_NO_THROW(ok.validate());
  EXPECT_EQ(ok.visual_end_idx(), 265);
  EXPECT_EQ(registered_vision_profile(kDefaultVisionProfile).layout(2048).visual_end_idx(), 265);
  StaticLayout l = ok;
  l.batch_size = 2;
  EXPECT_ERROR_WITH(l.validate(), "batch_size is 2");
  l = ok;
  l.max_seq = 0;
  EXPECT_ERROR_WITH(l.validate(), "max_seq is 0", "positive");
  l = ok;
  l.visual_start_idx = -2;
  EXPECT_ERROR_WITH(l.validate(), "visual_start_idx is -2");
  l = ok;
  l.num_visual_tokens = -1;
  EXPECT_ERROR_WITH(l.validate(), "num_visual_tokens is -1");
  l = ok;
  l.max_seq = 200;
  EXPECT_ERROR_WITH(l.validate(), "visual span [1, 265) does not fit in max_seq 200");
  // A layout without an image span (text only) is valid.
  EXPECT_NO_THROW((StaticLayout{16, 0, 0, 1}.validate()));
}

// --- processor-output checks (the #828 review: validate before replacing placeholders) ---

constexpr std::int64_t kImageTokenId = 258880;

std::vector<std::int64_t> ids_with_span(std::int64_t start, std::int64_t count, std::int64_t total) {
  std::vector<std::int64_t> ids(static_cast<std::size_t>(total), 1000);
  for (std::int64_t i = start; i < start + count; ++i) ids[static_cast<std::size_t>(i)] = kImageTokenId;
  return ids;
}

TEST(StaticProfileTextIds, ExactSpanPasses) {
  const VisionProfile p = tiny_profile();  // span [3, 27)
  EXPECT_NO_THROW(p.validate_text_input_ids(ids_with_span(3, 24, 40), kImageTokenId));
}

TEST(StaticProfileTextIds, NoImageTokens) {
  EXPECT_ERROR_WITH(tiny_profile().validate_text_input_ids(ids_with_span(0, 0, 40), kImageTokenId), "expected [3, 27)",
                    "got none", "no image tokens (id 258880)");
}

TEST(StaticProfileTextIds, StaleStartIsRefused) {
  // The span the processor produced starts one slot later than the profile says.
  EXPECT_ERROR_WITH(tiny_profile().validate_text_input_ids(ids_with_span(4, 24, 40), kImageTokenId), "expected [3, 27)",
                    "got [4, 28) (24 tokens)", "starts at 4, not at visual_start_idx 3");
}

TEST(StaticProfileTextIds, WrongCountIsRefused) {
  EXPECT_ERROR_WITH(tiny_profile().validate_text_input_ids(ids_with_span(3, 23, 40), kImageTokenId), "got [3, 26) (23 tokens)",
                    "23 image tokens, not num_visual_tokens 24");
}

TEST(StaticProfileTextIds, GapIsRefused) {
  auto ids = ids_with_span(3, 25, 40);
  ids[10] = 1000;  // 24 image ids, right start, but split in two
  EXPECT_ERROR_WITH(tiny_profile().validate_text_input_ids(ids, kImageTokenId), "not contiguous",
                    "not one contiguous span");
}

TEST(StaticProfileTextIds, StrayImageIdIsRefused) {
  auto ids = ids_with_span(3, 24, 40);
  ids[35] = kImageTokenId;  // a second image placeholder after the span
  EXPECT_ERROR_WITH(tiny_profile().validate_text_input_ids(ids, kImageTokenId), "25 image tokens", "not contiguous");
}

TEST(StaticProfilePositionIds, CanonicalPasses) {
  const VisionProfile p = tiny_profile();
  EXPECT_NO_THROW(p.validate_image_position_ids(p.image_position_ids().view()));
  // The same values as I32 are accepted (compared as int64).
  const Tensor i64 = p.image_position_ids();
  Tensor i32(DType::kI32, i64.shape());
  for (std::int64_t i = 0; i < i64.numel(); ++i) i32.as<std::int32_t>()[i] = static_cast<std::int32_t>(i64.as<std::int64_t>()[i]);
  EXPECT_NO_THROW(p.validate_image_position_ids(i32.view()));
}

TEST(StaticProfilePositionIds, OtherGridReportsShapeCountAndSha) {
  // The ids of the other registered profile: same shape, other grid.
  const VisionProfile& p = registered_vision_profile("e2b_66x36_264");
  const Tensor other = registered_vision_profile("e2b_57x42_266").image_position_ids();
  EXPECT_ERROR_WITH(p.validate_image_position_ids(other.view()), "do not match the canonical ones",
                    "expected_shape=[1, 2520, 2]", "actual_shape=[1, 2520, 2]", "expected_valid_patches=2376",
                    "actual_valid_patches=2394", ("expected_sha256=" + fixture_sha256("e2b_66x36_264")).c_str(),
                    ("actual_sha256=" + fixture_sha256("e2b_57x42_266")).c_str());
}

TEST(StaticProfilePositionIds, WrongShapeIsRefused) {
  const VisionProfile p = tiny_profile();
  Tensor t(DType::kI64, Shape{1, 269, 2});
  EXPECT_ERROR_WITH(p.validate_image_position_ids(t.view()), "expected_shape=[1, 270, 2]", "actual_shape=[1, 269, 2]",
                    "actual_valid_patches=269");
  Tensor f(DType::kF32, Shape{1, 270, 2});
  EXPECT_ERROR_WITH(p.validate_image_position_ids(f.view()), "image_position_ids (F32)", "actual_sha256=n/a");
}

TEST(StaticProfilePositionIds, OneChangedValueIsRefused) {
  const VisionProfile p = tiny_profile();
  Tensor t = p.image_position_ids();
  t.as<std::int64_t>()[2 * 5] = -1;  // patch 5 marked as padding
  EXPECT_ERROR_WITH(p.validate_image_position_ids(t.view()), "expected_valid_patches=216", "actual_valid_patches=215");
}

TEST(StaticProfilePixels, ShapeMustMatch) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  EXPECT_NO_THROW(p.validate_pixel_values_shape(Shape{1, 2520, 768}));
  EXPECT_ERROR_WITH(p.validate_pixel_values_shape(Shape{1, 2520, 588}), "pixel_values shape [1, 2520, 588]",
                    "profile's [1, 2520, 768]");
  EXPECT_ERROR_WITH(p.validate_pixel_values_shape(Shape{2, 2520, 768}), "pixel_values shape [2, 2520, 768]");
}

TEST(StaticProfileSoftTokens, CountsMustMatch) {
  const VisionProfile& p = registered_vision_profile(kDefaultVisionProfile);
  const std::vector<std::int64_t> ok = {264}, wrong = {266}, two = {264, 264};
  EXPECT_NO_THROW(p.validate_soft_token_counts(ok));
  EXPECT_ERROR_WITH(p.validate_soft_token_counts(wrong), "num_soft_tokens_per_image is [266]", "expected [264]");
  EXPECT_ERROR_WITH(p.validate_soft_token_counts(two), "num_soft_tokens_per_image is [264, 264]");
}

// --- inline (custom) profiles ---

TEST(InlineProfile, BuildsFromFieldsAndVisionConfig) {
  InlineVisionProfile f;
  f.visual_start_idx = 1;
  f.num_visual_tokens = 266;
  f.max_soft_tokens = 280;
  f.patch_grid_height = 42;
  f.patch_grid_width = 57;
  f.image_height = 672;
  VisionConfig v;
  const VisionProfile p = build_inline_vision_profile(f, 2048, &v);
  EXPECT_EQ(p.name, "custom");
  EXPECT_EQ(p.patch_size, 16);
  EXPECT_EQ(p.pooling_kernel_size, 3);
  // Same geometry as the registered 57x42 profile, so the same canonical ids.
  EXPECT_EQ(p.position_ids_sha256(), fixture_sha256("e2b_57x42_266"));
}

TEST(InlineProfile, MissingFieldsAreNamed) {
  InlineVisionProfile f;
  f.visual_start_idx = 1;
  f.patch_grid_width = 57;
  VisionConfig v;
  EXPECT_ERROR_WITH(build_inline_vision_profile(f, 2048, &v), "inline vision profile 'custom'",
                    "missing required field(s): num_visual_tokens, max_soft_tokens, patch_grid_height");
}

TEST(InlineProfile, ImageSizeMustMatchGrid) {
  InlineVisionProfile f;
  f.visual_start_idx = 1;
  f.num_visual_tokens = 266;
  f.max_soft_tokens = 280;
  f.patch_grid_height = 42;
  f.patch_grid_width = 57;
  f.image_width = 900;
  VisionConfig v;
  EXPECT_ERROR_WITH(build_inline_vision_profile(f, 2048, &v), "image_width 900 does not match the patch grid: expected 912");
}

TEST(InlineProfile, NeedsPatchSizeWithoutVisionConfig) {
  InlineVisionProfile f;
  f.visual_start_idx = 1;
  f.num_visual_tokens = 24;
  f.max_soft_tokens = 30;
  f.patch_grid_height = 12;
  f.patch_grid_width = 18;
  EXPECT_ERROR_WITH(build_inline_vision_profile(f, 64, nullptr), "patch_size and pooling_kernel_size must be given");
  f.patch_size = 16;
  f.pooling_kernel_size = 3;
  EXPECT_EQ(build_inline_vision_profile(f, 64, nullptr).position_ids_sha256(), fixture_sha256("tiny_18x12_24"));
  // The inline profile is validated like any other.
  f.num_visual_tokens = 23;
  EXPECT_ERROR_WITH(build_inline_vision_profile(f, 64, nullptr), "num_visual_tokens is 23");
}

}  // namespace
}  // namespace staticlm
