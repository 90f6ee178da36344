#include "runtime/profile_manifest.h"

#include <gtest/gtest.h>

#include <map>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "error_matchers.h"
#include "test_util.h"

namespace staticlm {
namespace {

std::string fixture_text(const std::string& name) {
  return read_file(test::fixture("static/" + name + ".vision_profile.json"));
}

// The fixtures are written by Python's json.dumps(indent=2, sort_keys=True), as TICO's
// save_manifest does: staticlm's manifest must be the same bytes.
TEST(ProfileManifest, ByteIdenticalToPythonManifest) {
  for (const VisionProfile& p : registered_vision_profiles()) {
    EXPECT_EQ(vision_profile_manifest_json(p), fixture_text(p.name)) << p.name;
  }
  const VisionProfile tiny{"tiny_18x12_24", 3, 24, 30, 12, 18, 16, 3, 1, false};
  EXPECT_EQ(vision_profile_manifest_json(tiny), fixture_text("tiny_18x12_24"));
}

TEST(ProfileManifest, ReadsTicoManifestUnchanged) {
  const VisionProfile p = parse_vision_profile_manifest(fixture_text("e2b_57x42_266"), "vision_profile.json");
  const VisionProfile& r = registered_vision_profile("e2b_57x42_266");
  EXPECT_EQ(p.name, r.name);
  EXPECT_EQ(p.visual_start_idx, r.visual_start_idx);
  EXPECT_EQ(p.num_visual_tokens, r.num_visual_tokens);
  EXPECT_EQ(p.max_soft_tokens, r.max_soft_tokens);
  EXPECT_EQ(p.patch_grid_height, r.patch_grid_height);
  EXPECT_EQ(p.patch_grid_width, r.patch_grid_width);
  EXPECT_EQ(p.patch_size, r.patch_size);
  EXPECT_EQ(p.pooling_kernel_size, r.pooling_kernel_size);
  EXPECT_EQ(p.batch_size, 1);
  EXPECT_FALSE(p.tokenizer_add_bos_token);
}

TEST(ProfileManifest, SaveThenLoadRoundTrips) {
  test::TempDir dir;
  const std::string path = dir.file("vision_profile.json");
  VisionProfile custom{"my_profile", 5, 24, 30, 12, 18, 16, 3, 1, true};
  save_vision_profile_manifest(custom, path);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()), 1)
      << "no temporary file may remain";
  const VisionProfile back = load_vision_profile_manifest(path);
  EXPECT_EQ(back.name, "my_profile");
  EXPECT_EQ(back.visual_start_idx, 5);
  EXPECT_TRUE(back.tokenizer_add_bos_token);
  EXPECT_EQ(vision_profile_manifest_json(back), read_file(path));
}

TEST(ProfileManifest, OptionalFieldsAndDerivedFieldsMayBeOmitted) {
  const std::string text = R"({"name": "hand", "visual_start_idx": 1, "num_visual_tokens": 24, "max_soft_tokens": 30,
      "patch_grid_height": 12, "patch_grid_width": 18, "patch_size": 16, "pooling_kernel_size": 3})";
  const VisionProfile p = parse_vision_profile_manifest(text, "hand.json");
  EXPECT_EQ(p.batch_size, 1);
  EXPECT_FALSE(p.tokenizer_add_bos_token);
  EXPECT_EQ(p.num_patches(), 270);
}

nlohmann::json fixture_json() { return nlohmann::json::parse(fixture_text("e2b_66x36_264")); }

TEST(ProfileManifestErrors, NotJson) {
  EXPECT_ERROR_WITH(parse_vision_profile_manifest("{\"name\": ", "vp.json"), "vp.json: not valid JSON");
  EXPECT_ERROR_WITH(parse_vision_profile_manifest("[1, 2]", "vp.json"), "vp.json: a vision profile manifest must be a JSON object, got array");
}

// Inputs the vision_profile fuzzer found (fuzz/regressions/vision_profile/): refused by name.
TEST(ProfileManifestErrors, FuzzRegressions) {
  const std::filesystem::path dir = std::filesystem::path(test::fixture("")) / "../../fuzz/regressions/vision_profile";
  const std::map<std::string, std::string> expected = {
      {"number_overflow.json", "vp.json: not valid JSON"},
      // Found by the structure-aware mutator: num_patches() = 2^31 * 9 was allocated.
      {"max_soft_tokens_int32_max.json", "vp.json: vision profile 'tiny_18x12_24': max_soft_tokens is 2147483647; the limit is 16384"},
  };
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++seen;
    const auto it = expected.find(e.path().filename().string());
    ASSERT_NE(it, expected.end()) << "no expected error for " << e.path();
    EXPECT_ERROR_WITH(parse_vision_profile_manifest(read_file(e.path().string()), "vp.json"), it->second);
  }
  EXPECT_EQ(seen, static_cast<int>(expected.size())) << dir;
}

// Each extent is bounded before it sizes anything; the bounds themselves still validate.
TEST(ProfileManifestErrors, ExtentsPastTheirLimits) {
  VisionProfile p;
  p.name = "big";
  p.pooling_kernel_size = 3;
  p.patch_size = 16;
  p.max_soft_tokens = kMaxProfileSoftTokens;
  p.patch_grid_height = 3 * 128;
  p.patch_grid_width = 3 * 128;
  p.num_visual_tokens = 128 * 128;
  EXPECT_NO_THROW(p.validate());
  EXPECT_EQ(p.num_patches(), kMaxProfileSoftTokens * 9);
  const std::vector<std::pair<std::int64_t VisionProfile::*, std::string>> fields = {
      {&VisionProfile::max_soft_tokens, "max_soft_tokens is 16385; the limit is 16384"},
      {&VisionProfile::patch_size, "patch_size is 1025; the limit is 1024"},
      {&VisionProfile::visual_start_idx, "visual_start_idx is 16777217; the limit is 16777216"},
  };
  const std::int64_t over[] = {kMaxProfileSoftTokens + 1, kMaxProfilePatchSize + 1, kMaxProfileSequence + 1};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    VisionProfile q = p;
    q.*fields[i].first = over[i];
    EXPECT_ERROR_WITH(q.validate(), fields[i].second);
  }
  VisionProfile wide = p;
  wide.patch_grid_width = std::int64_t{1} << 62;  // H * W would overflow
  EXPECT_ERROR_WITH(wide.validate(), "patch_grid_width is 4611686018427387904; the limit is 262144");
}

TEST(ProfileManifestErrors, MissingField) {
  auto j = fixture_json();
  j.erase("patch_grid_width");
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "vp.json: missing field 'patch_grid_width'");
}

TEST(ProfileManifestErrors, WrongTypes) {
  auto j = fixture_json();
  j["max_soft_tokens"] = "280";
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"),
                    "vp.json: field 'max_soft_tokens' must be an integer, got \"280\"");
  j = fixture_json();
  j["name"] = 3;
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "field 'name' must be a string, got 3");
  j = fixture_json();
  j["tokenizer_add_bos_token"] = 0;
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "'tokenizer_add_bos_token' must be true or false, got 0");
}

TEST(ProfileManifestErrors, UnknownField) {
  auto j = fixture_json();
  j["visual_stride"] = 2;
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "vp.json: unknown field 'visual_stride'");
}

TEST(ProfileManifestErrors, DerivedFieldDisagrees) {
  auto j = fixture_json();
  j["num_patches"] = 2519;
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"),
                    "vp.json: field 'num_patches' is 2519 but the profile's fields give 2520");
  j = fixture_json();
  j["image_position_ids_shape"] = {1, 2520, 3};
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "field 'image_position_ids_shape' is [1,2520,3]");
  j = fixture_json();
  // A manifest edited to another grid without regenerating its fingerprint.
  j["patch_grid_width"] = 63;
  j["num_visual_tokens"] = 252;
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "field 'image_position_ids_sha256' is \"245f8e68");
  j = fixture_json();
  const std::string real_sha = j["image_position_ids_sha256"].get<std::string>();
  j["image_position_ids_sha256"] = std::string(64, '0');
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"), "field 'image_position_ids_sha256' is \"0000",
                    ("give \"" + real_sha + "\"").c_str());
}

TEST(ProfileManifestErrors, InvalidGeometryNamesTheFile) {
  auto j = fixture_json();
  j["pooling_kernel_size"] = 5;
  EXPECT_ERROR_WITH(parse_vision_profile_manifest(j.dump(), "vp.json"),
                    "vp.json: vision profile 'e2b_66x36_264': patch_grid_height 36 is not divisible by pooling_kernel_size 5");
}

TEST(ProfileManifestErrors, MissingFile) {
  EXPECT_ERROR_WITH(load_vision_profile_manifest("/nonexistent/vision_profile.json"), "/nonexistent/vision_profile.json");
}

}  // namespace
}  // namespace staticlm
