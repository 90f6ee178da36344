#include "runtime/runtime_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/file.h"
#include "error_matchers.h"
#include "runtime/profile_manifest.h"
#include "test_util.h"

namespace staticlm {
namespace {

// TICO's tico/quantization/examples/configs/static_gemma4_runtime.yaml, as shipped.
constexpr const char* kTicoYaml = R"(debug:
  static_gemma4_runtime:
    model: google/gemma-4-e2b-it
    max_seq: 2048
    vision_profile: e2b_66x36_264
    padding_side: right
    device: cpu
    prompt: "<|image|>Describe the image."
    verify_steps: 4
    gen_steps: 16
)";

TEST(RuntimeConfig, DefaultsAreTicos) {
  const RuntimeConfig c = parse_runtime_config("", "empty.yaml");
  EXPECT_EQ(c.model, "google/gemma-4-e2b-it");
  EXPECT_EQ(c.max_seq, 2048);
  EXPECT_EQ(c.vision_profile.kind, ProfileSource::Kind::kRegistered);
  EXPECT_EQ(c.vision_profile.name, "e2b_66x36_264");
  EXPECT_EQ(c.padding_side, "right");
  EXPECT_EQ(c.prompt, "<|image|>Describe the image.");
  EXPECT_EQ(c.verify_steps, 4);
  EXPECT_EQ(c.gen_steps, 16);
  EXPECT_FALSE(c.image_height || c.image_width || c.visual_start_idx || c.num_visual_tokens);
  EXPECT_EQ(c.mask_fill_value, -120.0);
  EXPECT_EQ(c.rope_sine, RopeSine::kPreNegatedSin);
  EXPECT_EQ(c.image_fit, ImageFit::kStrict);
}

TEST(RuntimeConfig, ReadsTicoYamlUnchanged) {
  const RuntimeConfig c = parse_runtime_config(kTicoYaml, "static_gemma4_runtime.yaml");
  EXPECT_EQ(c.model, "google/gemma-4-e2b-it");
  EXPECT_EQ(c.max_seq, 2048);
  EXPECT_EQ(c.device, "cpu");
  EXPECT_EQ(c.prompt, "<|image|>Describe the image.");
}

TEST(RuntimeConfig, FlatYamlWithEveryKey) {
  const RuntimeConfig c = parse_runtime_config(R"(
model: /models/e2b
max_seq: 512
vision_profile: e2b_57x42_266
image_height: 672
image_width: 912
visual_start_idx: 1
num_visual_tokens: 266
padding_side: right
device: cpu
prompt: "hello <|image|>"
verify_steps: 2
gen_steps: 0
mask_fill_value: -1.0e4
rope_sine: hf
image_fit: fit
)",
                                               "flat.yaml");
  EXPECT_EQ(c.model, "/models/e2b");
  EXPECT_EQ(c.max_seq, 512);
  EXPECT_EQ(c.vision_profile.name, "e2b_57x42_266");
  EXPECT_EQ(*c.image_height, 672);
  EXPECT_EQ(*c.image_width, 912);
  EXPECT_EQ(*c.visual_start_idx, 1);
  EXPECT_EQ(*c.num_visual_tokens, 266);
  EXPECT_EQ(c.prompt, "hello <|image|>");
  EXPECT_EQ(c.verify_steps, 2);
  EXPECT_EQ(c.gen_steps, 0);
  EXPECT_EQ(c.mask_fill_value, -10000.0);
  EXPECT_EQ(c.rope_sine, RopeSine::kHf);
  EXPECT_EQ(c.image_fit, ImageFit::kFit);
  // null is TICO's None: the legacy field is unset.
  EXPECT_FALSE(parse_runtime_config("image_height: null\n", "n.yaml").image_height);
}

TEST(RuntimeConfig, UnknownKeyIsAnError) {
  EXPECT_ERROR_WITH(parse_runtime_config("max_seq: 64\nmax_sequence: 128\n", "cfg.yaml"),
                    "cfg.yaml: unknown key 'max_sequence'", "known keys: model, max_seq");
  EXPECT_ERROR_WITH(parse_runtime_config("", "cfg.yaml", {"temperature=0.5"}), "--set temperature=0.5: unknown key 'temperature'");
  EXPECT_ERROR_WITH(parse_runtime_config("debug:\n  static_gemma4_runtime:\n    seed: 1\n", "cfg.yaml"),
                    "cfg.yaml: unknown key 'seed'");
}

TEST(RuntimeConfig, WrongTypesAndRanges) {
  EXPECT_ERROR_WITH(parse_runtime_config("max_seq: abc\n", "cfg.yaml"), "cfg.yaml: max_seq: expected an integer, got 'abc'");
  EXPECT_ERROR_WITH(parse_runtime_config("max_seq: 20.5\n", "cfg.yaml"), "max_seq: expected an integer, got '20.5'");
  EXPECT_ERROR_WITH(parse_runtime_config("max_seq: [1, 2]\n", "cfg.yaml"), "max_seq: expected an integer, got [1, 2]");
  EXPECT_ERROR_WITH(parse_runtime_config("max_seq: 0\n", "cfg.yaml"), "cfg.yaml: max_seq: 0 must be positive");
  EXPECT_ERROR_WITH(parse_runtime_config("verify_steps: -1\n", "cfg.yaml"), "verify_steps: -1 must be >= 0");
  EXPECT_ERROR_WITH(parse_runtime_config("gen_steps: -2\n", "cfg.yaml"), "gen_steps: -2 must be >= 0");
  EXPECT_ERROR_WITH(parse_runtime_config("mask_fill_value: 5\n", "cfg.yaml"),
                    "mask_fill_value: 5 must be a finite negative number");
  EXPECT_ERROR_WITH(parse_runtime_config("mask_fill_value: .nan\n", "cfg.yaml"), "mask_fill_value: nan must be");
  EXPECT_ERROR_WITH(parse_runtime_config("mask_fill_value: low\n", "cfg.yaml"), "mask_fill_value: expected a number, got 'low'");
  EXPECT_ERROR_WITH(parse_runtime_config("rope_sine: negated\n", "cfg.yaml"),
                    "rope_sine: 'negated' is not one of: hf, pre_negated_sin");
  EXPECT_ERROR_WITH(parse_runtime_config("image_fit: crop\n", "cfg.yaml"), "image_fit: 'crop' is not one of: strict, fit");
  EXPECT_ERROR_WITH(parse_runtime_config("prompt: {a: 1}\n", "cfg.yaml"), "prompt: expected a string, got {a: 1}");
  EXPECT_ERROR_WITH(parse_runtime_config("image_width: wide\n", "cfg.yaml"), "image_width: expected an integer");
}

TEST(RuntimeConfig, OnlyRightPaddingIsAccepted) {
  ErrorKind kind{};
  const std::string msg = test::error_message([] { parse_runtime_config("padding_side: left\n", "cfg.yaml"); }, &kind);
  EXPECT_NE(msg.find("cfg.yaml: padding_side: Unsupported padding_side 'left': only 'right' padding is supported"),
            std::string::npos)
      << msg;
  EXPECT_EQ(kind, ErrorKind::kUnsupported);
  EXPECT_ERROR_WITH(parse_runtime_config("", "cfg.yaml", {"padding_side=left"}),
                    "--set padding_side=left: padding_side: Unsupported padding_side 'left'");
}

TEST(RuntimeConfig, MalformedYamlAndLayout) {
  EXPECT_ERROR_WITH(parse_runtime_config("max_seq: [1, 2\n", "cfg.yaml"), "cfg.yaml: not valid YAML");
  EXPECT_ERROR_WITH(parse_runtime_config("- 1\n- 2\n", "cfg.yaml"), "cfg.yaml: a runtime config must be a mapping");
  EXPECT_ERROR_WITH(parse_runtime_config("debug:\n  other: {}\n", "cfg.yaml"),
                    "cfg.yaml: a nested config must hold exactly debug.static_gemma4_runtime");
}

TEST(RuntimeConfigOverrides, ValuesAreYamlScalars) {
  const RuntimeConfig c = parse_runtime_config(kTicoYaml, "cfg.yaml",
                                               {"image_fit=fit", "max_seq=512", "prompt=<|image|>What is this? A: b",
                                                "mask_fill_value=-1e4", "debug.static_gemma4_runtime.gen_steps=3",
                                                "rope=hf", "visual_start_idx=1"});
  EXPECT_EQ(c.image_fit, ImageFit::kFit);
  EXPECT_EQ(c.max_seq, 512);
  EXPECT_EQ(c.prompt, "<|image|>What is this? A: b");
  EXPECT_EQ(c.mask_fill_value, -10000.0);
  EXPECT_EQ(c.gen_steps, 3);
  EXPECT_EQ(c.rope_sine, RopeSine::kHf);
  EXPECT_EQ(*c.visual_start_idx, 1);
  // Later overrides win.
  EXPECT_EQ(parse_runtime_config("", "c", {"max_seq=64", "max_seq=128"}).max_seq, 128);
  // A quoted value stays a string; an integer key then refuses it with the override named.
  EXPECT_ERROR_WITH(parse_runtime_config("", "c", {"max_seq=many"}), "--set max_seq=many: max_seq: expected an integer, got 'many'");
}

TEST(RuntimeConfigOverrides, Malformed) {
  EXPECT_ERROR_WITH(parse_runtime_config("", "c", {"max_seq"}), "--set max_seq: expected KEY=VALUE");
  EXPECT_ERROR_WITH(parse_runtime_config("", "c", {"=5"}), "--set =5: expected KEY=VALUE");
  EXPECT_ERROR_WITH(parse_runtime_config("", "c", {"max_seq.x=5"}), "--set max_seq.x=5: key 'max_seq' has no fields");
  EXPECT_ERROR_WITH(parse_runtime_config("", "c", {"vision_profile.grid=5"}),
                    "--set vision_profile.grid=5: unknown vision_profile field 'grid'");
  EXPECT_ERROR_WITH(parse_runtime_config("vision_profile: exported.json\n", "c", {"vision_profile.patch_grid_height=42"}),
                    "vision_profile is 'exported.json'; a field can be set on a registered or an inline profile only");
  EXPECT_ERROR_WITH(parse_runtime_config("vision_profile: [1]\n", "c", {"vision_profile.patch_grid_height=42"}),
                    "vision_profile is [1], not a profile name or an inline profile");
}

// One field of a registered profile: the others stay the registered profile's.
TEST(RuntimeConfigOverrides, FieldOfRegisteredProfile) {
  for (const std::string& yaml : {std::string(""), std::string("vision_profile: e2b_57x42_266\n")}) {
    const RuntimeConfig c = parse_runtime_config(yaml, "c", {"vision_profile.visual_start_idx=5"});
    ASSERT_EQ(c.vision_profile.kind, ProfileSource::Kind::kInline);
    VisionConfig v;
    const StaticSetup s = resolve_static_setup(c, &v);
    const VisionProfile& base = registered_vision_profile(yaml.empty() ? "e2b_66x36_264" : "e2b_57x42_266");
    EXPECT_EQ(s.profile.name, "custom");
    EXPECT_EQ(s.profile.visual_start_idx, 5);
    EXPECT_EQ(s.profile.num_visual_tokens, base.num_visual_tokens);
    EXPECT_EQ(s.profile.patch_grid_height, base.patch_grid_height);
    EXPECT_EQ(s.profile.patch_grid_width, base.patch_grid_width);
    EXPECT_EQ(s.profile.position_ids_sha256(), base.position_ids_sha256());
    EXPECT_EQ(s.layout.visual_end_idx(), 5 + base.num_visual_tokens);
  }
}

// "--profile V" (the CLI's --profile flag) is vision_profile=V, and errors name the flag.
TEST(RuntimeConfigOverrides, ProfileFlag) {
  const RuntimeConfig c = parse_runtime_config("vision_profile: e2b_66x36_264\n", "c", {"--profile e2b_57x42_266"});
  VisionConfig v;
  EXPECT_EQ(resolve_static_setup(c, &v).profile.name, "e2b_57x42_266");
  const RuntimeConfig edited =
      parse_runtime_config("", "c", {"--profile e2b_57x42_266", "vision_profile.visual_start_idx=5"});
  const StaticSetup s = resolve_static_setup(edited, &v);
  EXPECT_EQ(s.profile.visual_start_idx, 5);
  EXPECT_EQ(s.profile.num_visual_tokens, registered_vision_profile("e2b_57x42_266").num_visual_tokens);
  EXPECT_ERROR_WITH(parse_runtime_config("", "c", {"--profile e2b_64x64_256"}),
                    "--profile e2b_64x64_256: vision_profile: unknown vision profile 'e2b_64x64_256'");
}

// Inputs the runtime_config fuzzer found (fuzz/regressions/runtime_config/): refused by name.
TEST(RuntimeConfig, FuzzRegressions) {
  const std::filesystem::path dir = std::filesystem::path(test::fixture("")) / "../../fuzz/regressions/runtime_config";
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++seen;
    EXPECT_ERROR_WITH(parse_runtime_config(read_file(e.path().string()), "cfg.yaml"), "cfg.yaml: ");
  }
  EXPECT_GE(seen, 1) << dir;
}

TEST(RuntimeConfig, RopeAliasMustAgree) {
  EXPECT_EQ(parse_runtime_config("rope: hf\n", "c").rope_sine, RopeSine::kHf);
  EXPECT_ERROR_WITH(parse_runtime_config("rope: hf\nrope_sine: pre_negated_sin\n", "c.yaml"),
                    "c.yaml: rope: 'hf' conflicts with rope_sine 'pre_negated_sin'");
}

TEST(RuntimeConfigProfile, UnknownRegisteredName) {
  EXPECT_ERROR_WITH(parse_runtime_config("vision_profile: e2b_64x64_256\n", "c.yaml"),
                    "c.yaml: vision_profile: unknown vision profile 'e2b_64x64_256'", "e2b_57x42_266");
}

TEST(RuntimeConfigProfile, InlineProfileFromYamlAndOverrides) {
  const RuntimeConfig c = parse_runtime_config(R"(
max_seq: 64
vision_profile:
  name: tiny
  visual_start_idx: 3
  num_visual_tokens: 24
  max_soft_tokens: 30
  patch_grid_height: 12
  patch_grid_width: 18
)",
                                               "c.yaml", {"vision_profile.patch_grid_width=21", "vision_profile.num_visual_tokens=28"});
  ASSERT_EQ(c.vision_profile.kind, ProfileSource::Kind::kInline);
  EXPECT_EQ(c.vision_profile.inline_fields.name, "tiny");
  EXPECT_EQ(*c.vision_profile.inline_fields.patch_grid_width, 21);
  VisionConfig v;
  v.default_output_length = 30;
  const StaticSetup s = resolve_static_setup(c, &v);
  EXPECT_EQ(s.profile.soft_grid_width(), 7);
  EXPECT_EQ(s.profile.num_visual_tokens, 28);
  EXPECT_EQ(s.layout.max_seq, 64);
  EXPECT_EQ(s.layout.visual_start_idx, 3);
  EXPECT_EQ(s.layout.num_visual_tokens, 28);
  EXPECT_ERROR_WITH(parse_runtime_config("vision_profile: {grid: 3}\n", "c.yaml"),
                    "c.yaml: vision_profile: unknown inline profile field 'grid'");
  EXPECT_ERROR_WITH(parse_runtime_config("vision_profile: {patch_grid_width: wide}\n", "c.yaml"),
                    "vision_profile: patch_grid_width: expected an integer, got 'wide'");
  // Against the default vision config (280 soft tokens) the inline profile's 30 is refused.
  EXPECT_ERROR_WITH(resolve_static_setup(c, nullptr), "patch_size and pooling_kernel_size must be given");
  VisionConfig e2b;
  EXPECT_ERROR_WITH(resolve_static_setup(c, &e2b), "max_soft_tokens 30 does not match the model's vision_config.default_output_length 280");
}

TEST(RuntimeConfigProfile, ManifestPathIsRelativeToTheConfigFile) {
  test::TempDir dir;
  VisionProfile custom{"exported", 1, 266, 280, 42, 57, 16, 3, 1, false};
  save_vision_profile_manifest(custom, dir.file("vision_profile.json"));
  write_text_atomic(dir.file("runtime.yaml"), "vision_profile: vision_profile.json\nmax_seq: 300\n");
  const RuntimeConfig c = load_runtime_config(dir.file("runtime.yaml"), {});
  ASSERT_EQ(c.vision_profile.kind, ProfileSource::Kind::kManifest);
  EXPECT_EQ(c.vision_profile.name, dir.file("vision_profile.json"));
  VisionConfig v;
  const StaticSetup s = resolve_static_setup(c, &v);
  EXPECT_EQ(s.profile.name, "exported");
  EXPECT_EQ(s.layout.visual_end_idx(), 267);
  // A missing manifest is named.
  const RuntimeConfig missing = parse_runtime_config("vision_profile: nowhere/vp.json\n", "r.yaml", {}, "/tmp/x");
  EXPECT_ERROR_WITH(resolve_static_setup(missing, &v), "/tmp/x/nowhere/vp.json");
}

TEST(RuntimeConfigResolve, DefaultSetup) {
  VisionConfig v;
  const StaticSetup s = resolve_static_setup(parse_runtime_config(kTicoYaml, "c"), &v);
  EXPECT_EQ(s.profile.name, "e2b_66x36_264");
  EXPECT_EQ(s.layout.max_seq, 2048);
  EXPECT_EQ(s.layout.visual_start_idx, 1);
  EXPECT_EQ(s.layout.num_visual_tokens, 264);
  EXPECT_EQ(s.layout.batch_size, 1);
}

TEST(RuntimeConfigResolve, LegacyFieldsMustAgreeWithProfile) {
  VisionConfig v;
  EXPECT_NO_THROW(resolve_static_setup(
      parse_runtime_config("image_height: 576\nimage_width: 1056\nvisual_start_idx: 1\nnum_visual_tokens: 264\n", "c"), &v));
  EXPECT_ERROR_WITH(resolve_static_setup(parse_runtime_config("", "c", {"visual_start_idx=2"}), &v),
                    "visual_start_idx conflicts with vision profile 'e2b_66x36_264': configured=2, expected=1");
  EXPECT_ERROR_WITH(resolve_static_setup(parse_runtime_config("image_height: 480\n", "c"), &v),
                    "image_height conflicts with vision profile 'e2b_66x36_264': configured=480, expected=576");
  EXPECT_ERROR_WITH(resolve_static_setup(parse_runtime_config("image_width: 640\n", "c"), &v),
                    "image_width conflicts", "configured=640, expected=1056");
  EXPECT_ERROR_WITH(resolve_static_setup(parse_runtime_config("vision_profile: e2b_57x42_266\nnum_visual_tokens: 264\n", "c"), &v),
                    "num_visual_tokens conflicts with vision profile 'e2b_57x42_266': configured=264, expected=266");
}

TEST(RuntimeConfigResolve, SpanMustFitMaxSeq) {
  VisionConfig v;
  EXPECT_ERROR_WITH(resolve_static_setup(parse_runtime_config("max_seq: 200\n", "c"), &v),
                    "visual span [1, 265) does not fit in max_seq 200");
}

TEST(RuntimeConfig, YamlRoundTrip) {
  const RuntimeConfig c = parse_runtime_config(
      "max_seq: 300\nvision_profile: {name: t, visual_start_idx: 3, num_visual_tokens: 24, max_soft_tokens: 30, "
      "patch_grid_height: 12, patch_grid_width: 18}\nprompt: \"a: 'b' \\\"c\\\"\"\nrope_sine: hf\nimage_fit: fit\n"
      "image_height: 192\nmask_fill_value: -7.5\n",
      "c");
  const RuntimeConfig back = parse_runtime_config(runtime_config_to_yaml(c), "back");
  EXPECT_EQ(back.max_seq, 300);
  EXPECT_EQ(back.vision_profile.kind, ProfileSource::Kind::kInline);
  EXPECT_EQ(*back.vision_profile.inline_fields.patch_grid_width, 18);
  EXPECT_EQ(back.prompt, "a: 'b' \"c\"");
  EXPECT_EQ(back.rope_sine, RopeSine::kHf);
  EXPECT_EQ(back.image_fit, ImageFit::kFit);
  EXPECT_EQ(*back.image_height, 192);
  EXPECT_EQ(back.mask_fill_value, -7.5);
  EXPECT_EQ(runtime_config_to_yaml(back), runtime_config_to_yaml(c));
}

}  // namespace
}  // namespace staticlm
