// `staticlm inputs` end to end on the tiny model: the reference prompt "<|image|>Describe the
// image." with a 1056x576-aspect image under e2b_66x36_264 gives 264 image slots at [1, 265);
// the documented failures (other profile, two images, stale visual_start_idx, max_seq too small)
// each exit 2 with their message and leave no output file; fit mode takes a 640x480 image.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

const std::string kPrompt = "'<|image|>Describe the image.'";

class StaticInputsCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = std::make_unique<test::TempDir>();
    const auto r = test::run_staticlm("make-model --preset tiny --seed 1 --out " + dir_->file("m"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { dir_.reset(); }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "the Gemma tokenizer is not fetched (scripts/setup.sh)";
  }

  static std::string model() { return dir_->file("m"); }
  static std::string image(const std::string& name) { return test::fixture("static/" + name); }
  std::string out() const { return out_dir_.file("inputs.safetensors"); }
  test::CommandResult inputs(const std::string& args) const {
    return test::run_staticlm("inputs -m " + model() + " --out " + out() + " " + args);
  }
  // Runs a command that must fail: exit 2, the message on stderr, and no output file.
  void expect_failure(const std::string& args, const std::string& message) const {
    expect_failure_in(model(), args, message);
  }
  void expect_failure_in(const std::string& model_dir, const std::string& args, const std::string& message) const {
    const auto r = test::run_staticlm("inputs -m " + model_dir + " --out " + out() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << "missing '" << message << "' in: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(out())) << "no output after a failure";
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(out_dir_.path()), std::filesystem::directory_iterator()), 0)
        << "no temporary file either";
  }

  static std::unique_ptr<test::TempDir> dir_;
  test::TempDir out_dir_;
};

std::unique_ptr<test::TempDir> StaticInputsCli::dir_;

std::vector<std::int64_t> i64s(const TensorView& v) {
  auto s = v.as<std::int64_t>();
  return {s.begin(), s.end()};
}

TEST_F(StaticInputsCli, ReferencePromptGives264SlotsAt1) {
  const auto r = inputs("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --profile e2b_66x36_264 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const std::int64_t t = j.at("T").get<std::int64_t>();
  EXPECT_EQ(j.at("S"), 2048);
  EXPECT_EQ(j.at("span"), nlohmann::json::array({1, 265}));
  EXPECT_EQ(j.at("num_visual_tokens"), 264);
  EXPECT_EQ(j.at("vision_profile"), "e2b_66x36_264");
  EXPECT_TRUE(j.at("all_passed").get<bool>());
  std::vector<std::string> names;
  for (const auto& c : j.at("checks")) {
    names.push_back(c.at("name"));
    EXPECT_TRUE(c.at("passed").get<bool>()) << c.dump();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"llm_input_ids", "attention_mask", "pixel_values", "image_position_ids",
                                             "valid_length", "padding"}));
  // The canonical ids' fingerprint is the Python-computed one.
  const auto manifest = nlohmann::json::parse(read_file(test::fixture("static/e2b_66x36_264.vision_profile.json")));
  EXPECT_EQ(j.at("image_position_ids_sha256"), manifest.at("image_position_ids_sha256"));

  const auto f = SafetensorsFile::open(out());
  const TensorView ids = f->get("llm_input_ids");
  ASSERT_EQ(ids.dtype, DType::kI64);
  ASSERT_EQ(ids.shape, (Shape{1, 2048}));
  const auto v = i64s(ids);
  EXPECT_EQ(v[0], 255999);  // <|image>: no BOS without the chat format (add_bos_token false)
  for (int i = 1; i < 265; ++i) ASSERT_EQ(v[i], 0) << "image slot " << i << " holds the pad id";
  EXPECT_EQ(v[265], 258882);  // <image|>
  for (std::int64_t i = t; i < 2048; ++i) ASSERT_EQ(v[i], 0) << "padding slot " << i;
  const auto raw = i64s(f->get("raw_input_ids"));
  ASSERT_EQ(raw.size(), static_cast<std::size_t>(t));
  EXPECT_EQ(std::count(raw.begin(), raw.end(), 258880), 264);
  EXPECT_EQ(raw[1], 258880);
  EXPECT_EQ(raw[264], 258880);
  for (std::int64_t i = 266; i < t; ++i) EXPECT_EQ(v[i], raw[i]) << "text token " << i;
  EXPECT_GT(t, 266) << "the text after the image is tokenized";

  const TensorView mask = f->get("attention_mask");
  EXPECT_EQ(mask.dtype, DType::kU8);
  EXPECT_EQ(mask.shape, (Shape{1, 2048}));
  for (std::int64_t i = 0; i < 2048; ++i) ASSERT_EQ(mask.as<std::uint8_t>()[i], i < t ? 1 : 0) << i;
  EXPECT_EQ(i64s(f->get("valid_length")), std::vector<std::int64_t>{t});
  const TensorView px = f->get("pixel_values");
  EXPECT_EQ(px.dtype, DType::kF32);
  EXPECT_EQ(px.shape, (Shape{1, 2520, 768}));
  // Padding patches (2376..2519) are zero; valid ones hold pixels in [0, 1].
  const auto pv = px.as<float>();
  for (std::size_t i = 2376 * 768; i < pv.size(); ++i) ASSERT_EQ(pv[i], 0.0f);
  float lo = 1, hi = 0;
  for (std::size_t i = 0; i < 2376 * 768; ++i) lo = std::min(lo, pv[i]), hi = std::max(hi, pv[i]);
  EXPECT_GE(lo, 0.0f);
  EXPECT_LE(hi, 1.0f);
  EXPECT_GT(hi, lo);
  const TensorView pos = f->get("image_position_ids");
  EXPECT_EQ(pos.shape, (Shape{1, 2520, 2}));
  EXPECT_EQ(pos.as<std::int64_t>()[2 * 67], 1);      // patch 67: x = 1
  EXPECT_EQ(pos.as<std::int64_t>()[2 * 67 + 1], 1);  // y = 1
  EXPECT_EQ(f->metadata().at("vision_profile"), "e2b_66x36_264");
}

TEST_F(StaticInputsCli, ManifestProfileIsUsedUnchanged) {
  const auto a = inputs("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --json --profile " +
                        test::fixture("static/e2b_66x36_264.vision_profile.json"));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out).at("span"), nlohmann::json::array({1, 265}));
}

TEST_F(StaticInputsCli, OtherProfileFails) {
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --profile e2b_57x42_266",
                 "gives a patch grid of 36 x 66 patches");
}

TEST_F(StaticInputsCli, TwoImagesFail) {
  expect_failure("--prompt '<|image|><|image|>Describe the images.' --image " + image("aspect_528x288.png") + " --image " +
                     image("aspect_528x288.png"),
                 "2 images given; the static layout has one image span");
}

TEST_F(StaticInputsCli, StaleVisualStartFails) {
  // The legacy key disagrees with the profile...
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --set visual_start_idx=2",
                 "visual_start_idx conflicts with vision profile 'e2b_66x36_264': configured=2, expected=1");
  // ...and an inline profile whose span starts at 2 meets the processor's span at 1.
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") +
                     " --set 'vision_profile={visual_start_idx: 2, num_visual_tokens: 264, max_soft_tokens: 280, "
                     "patch_grid_height: 36, patch_grid_width: 66}'",
                 "expected [2, 266), got [1, 265) (264 tokens)");
}

TEST_F(StaticInputsCli, MaxSeqTooSmallFails) {
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --max-seq 200",
                 "visual span [1, 265) does not fit in max_seq 200");
  const auto ok = inputs("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  std::filesystem::remove(out());
  const std::int64_t t = nlohmann::json::parse(ok.out).at("T").get<std::int64_t>();
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --max-seq " + std::to_string(t - 1),
                 "Input sequence length T=" + std::to_string(t) + " exceeds max_seq " + std::to_string(t - 1));
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --reserve-decode-slot --max-seq " +
                     std::to_string(t),
                 "Input sequence length T=" + std::to_string(t) + " leaves no decode slot");
  const auto exact = inputs("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --max-seq " + std::to_string(t));
  EXPECT_EQ(exact.exit_code, 0) << exact.err;
}

TEST_F(StaticInputsCli, FitModeTakesA640x480Image) {
  expect_failure("--prompt " + kPrompt + " --image " + image("photo_640x480.png"), "gives a patch grid of 42 x 57 patches");
  const auto r = inputs("--prompt " + kPrompt + " --image " + image("photo_640x480.png") + " --set image_fit=fit --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("span"), nlohmann::json::array({1, 265}));
  EXPECT_EQ(j.at("image_fit"), "fit");
  EXPECT_TRUE(j.at("all_passed").get<bool>());
  // Its natural grid is the other registered profile's: strict mode takes it there.
  std::filesystem::remove(out());
  const auto other = inputs("--prompt " + kPrompt + " --image " + image("photo_640x480.png") + " --profile e2b_57x42_266 --json");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(nlohmann::json::parse(other.out).at("span"), nlohmann::json::array({1, 267}));
}

TEST_F(StaticInputsCli, TextOnlyPrompt) {
  // max_seq 32 cannot hold the default profile's image span, but a text-only prompt is not
  // checked against it.
  const auto r = inputs("--prompt 'Hello there' --max-seq 32 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out).at("span").is_null());
  std::filesystem::remove(out());
  const auto ok = inputs("--prompt 'Hello there' --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(j.at("span").is_null());
  EXPECT_TRUE(j.at("all_passed").get<bool>());
  const auto f = SafetensorsFile::open(out());
  EXPECT_FALSE(f->contains("pixel_values"));
  EXPECT_FALSE(f->contains("image_position_ids"));
  EXPECT_EQ(i64s(f->get("valid_length"))[0], j.at("T").get<std::int64_t>());
}

TEST_F(StaticInputsCli, ConfigFileAndBadInput) {
  test::TempDir cfg_dir;
  const std::string cfg = cfg_dir.file("runtime.yaml");
  write_text_atomic(cfg, "debug:\n  static_gemma4_runtime:\n    max_seq: 512\n    vision_profile: e2b_66x36_264\n"
                         "    padding_side: right\n    prompt: \"<|image|>Describe the image.\"\n");
  const auto r = inputs("--config " + cfg + " --image " + image("aspect_528x288.png") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).at("S"), 512);
  std::filesystem::remove(out());
  expect_failure("--prompt " + kPrompt + " --image " + image("aspect_528x288.png") + " --set padding_side=left",
                 "only 'right' padding is supported");
  expect_failure("--prompt " + kPrompt, "placeholder(s) but 0 image(s) were given");
  expect_failure("--prompt hi --set temperature=1", "--set temperature=1: unknown key 'temperature'");
  expect_failure("--prompt hi --image " + out_dir_.file("missing.png"), "missing.png");
}


TEST_F(StaticInputsCli, ChatFormatMovesTheSpan) {
  // "<bos><|turn>user\n" comes before the image: the registered profiles (span at 1) refuse it,
  // an inline profile whose span starts after those 5 tokens takes it.
  expect_failure("--chat --prompt " + kPrompt + " --image " + image("aspect_528x288.png"),
                 "starts at 5, not at visual_start_idx 1");
  const std::string chat_profile = " --set vision_profile.visual_start_idx=5";  // e2b_66x36_264, span moved
  const auto r = inputs("--chat --prompt " + kPrompt + " --image " + image("aspect_528x288.png") + chat_profile + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("span"), nlohmann::json::array({5, 269}));
  EXPECT_EQ(j.at("raw_input_ids_head")[0], 2);    // <bos>
  EXPECT_EQ(j.at("raw_input_ids_head")[1], 105);  // <|turn>
  EXPECT_EQ(j.at("raw_input_ids_head")[4], 255999);
  // The same conversation as a messages file gives the same inputs.
  std::filesystem::remove(out());
  test::TempDir msg_dir;
  write_text_atomic(msg_dir.file("messages.json"),
                    R"([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe the image."}]}])");
  const auto m = inputs("--messages " + msg_dir.file("messages.json") + " --image " + image("aspect_528x288.png") +
                        chat_profile + " --json");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const auto mj = nlohmann::json::parse(m.out);
  EXPECT_EQ(mj.at("T"), j.at("T"));
  EXPECT_EQ(mj.at("raw_input_ids_head"), j.at("raw_input_ids_head"));
  std::filesystem::remove(out());
  expect_failure("--messages " + msg_dir.file("messages.json") + chat_profile,
                 "an image part names no file and no --image is left for it");
  expect_failure("--messages " + msg_dir.file("messages.json") + " --prompt hi", "give --prompt or --messages, not both");
}


// A directory holding the tiny model's config and tokenizer (linked), with its own
// tokenizer_config.json.
std::string model_with_tokenizer_config(const test::TempDir& dir, const std::string& model, const std::string& text) {
  for (const char* f : {"config.json", "tokenizer.json"}) {
    std::filesystem::create_symlink(model + "/" + f, dir.file(f));
  }
  write_text_atomic(dir.file("tokenizer_config.json"), text);
  return dir.path();
}

TEST_F(StaticInputsCli, ProcessorSettingsMustMatchProfile) {
  test::TempDir m;
  const std::string dir = model_with_tokenizer_config(m, model(), R"({"add_bos_token": true})");
  auto r = test::run_staticlm("inputs -m " + dir + " --prompt " + kPrompt + " --image " + image("aspect_528x288.png") +
                              " --out " + out());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tokenizer_add_bos_token is false but the tokenizer's add_bos_token is true"), std::string::npos)
      << r.err;
  test::TempDir m2;
  const std::string bad = model_with_tokenizer_config(m2, model(), R"({"add_bos_token": "yes"})");
  r = test::run_staticlm("inputs -m " + bad + " --prompt hi --out " + out());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tokenizer_config.json: add_bos_token must be true or false, got \"yes\""), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out()));
  // The image processor's settings must agree with the profile too (TICO's validate_processor).
  test::TempDir m3;
  const std::string pre = model_with_tokenizer_config(m3, model(), R"({"add_bos_token": false})");
  write_text_atomic(m3.file("preprocessor_config.json"), R"({"patch_size": 16, "max_soft_tokens": 560})");
  const std::string with_image = " --prompt " + kPrompt + " --image " + image("aspect_528x288.png");
  r = test::run_staticlm("inputs -m " + pre + with_image + " --out " + out());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("the image processor's max_soft_tokens is 560 but the profile's is 280"), std::string::npos) << r.err;
  write_text_atomic(m3.file("preprocessor_config.json"), R"({"patch_size": 16})");
  write_text_atomic(m3.file("processor_config.json"), R"({"image_seq_length": 256})");
  r = test::run_staticlm("inputs -m " + pre + with_image + " --out " + out());
  EXPECT_NE(r.err.find("the processor's image_seq_length is 256 but the profile's max_soft_tokens is 280"), std::string::npos)
      << r.err;
  // Pixel settings other than the Gemma 4 processor's (which staticlm's preprocessing does) are
  // refused by the field, not silently left undone; the processor's own values pass.
  std::filesystem::remove(m3.file("processor_config.json"));
  for (const auto& [settings, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"do_normalize": true, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})",
            "preprocessor_config.json: image_mean [0.5,0.5,0.5]: staticlm's Gemma 4 image processing takes 0"},
           {R"({"do_normalize": true, "image_std": [0, 0, 0]})", "preprocessor_config.json: image_std [0,0,0]"},
           {R"({"resample": 99})", "preprocessor_config.json: resample 99: staticlm's Gemma 4 image processing takes 3 (bicubic)"},
           {R"({"rescale_factor": 1})", "preprocessor_config.json: rescale_factor 1: staticlm's Gemma 4 image processing takes 1/255"},
           {R"({"do_rescale": false})", "preprocessor_config.json: do_rescale false"},
           {R"({"do_normalize": "x"})", "preprocessor_config.json: do_normalize \"x\""}}) {
    write_text_atomic(m3.file("preprocessor_config.json"), settings);
    r = test::run_staticlm("inputs -m " + pre + with_image + " --out " + out());
    EXPECT_EQ(r.exit_code, 2) << settings;
    EXPECT_NE(r.err.find(message), std::string::npos) << settings << "\n" << r.err;
    EXPECT_FALSE(std::filesystem::exists(out()));
  }
  write_text_atomic(m3.file("preprocessor_config.json"),
                    R"({"do_convert_rgb": true, "do_resize": true, "resample": 3, "do_rescale": true, "rescale_factor": 0.00392156862745098, )"
                    R"("do_normalize": false, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "patch_size": 16})");
  r = test::run_staticlm("inputs -m " + pre + with_image + " --out " + out());
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(StaticInputsCli, TextOnlyModel) {
  test::TempDir m;
  auto r = test::run_staticlm("make-model --preset tiny --seed 2 --text-only --out " + m.file("t"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // No vision tower: no image span in the layout, so a short max_seq is fine...
  r = test::run_staticlm("inputs -m " + m.file("t") + " --prompt 'Hello there' --max-seq 8 --json --out " + out());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("S"), 8);
  EXPECT_TRUE(j.at("vision_profile").is_null());
  EXPECT_TRUE(j.at("all_passed").get<bool>());
  std::filesystem::remove(out());
  // ...and an image is refused.
  expect_failure_in(m.file("t"), "--prompt " + kPrompt + " --image " + image("aspect_528x288.png"),
                    "an image was given but the model is text-only");
}


// image_token_id comes from the top-level config: a null there is an error even when
// text_config carries one.
TEST_F(StaticInputsCli, ImageTokenIdFromTopLevelConfig) {
  test::TempDir m;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    std::filesystem::create_symlink(model() + "/" + f, m.file(f));
  }
  auto config = nlohmann::json::parse(read_file(model() + "/config.json"));
  config["image_token_id"] = nullptr;
  config["text_config"]["image_token_id"] = 258880;
  write_text_atomic(m.file("config.json"), config.dump(2));
  expect_failure_in(m.path(), "--prompt " + kPrompt + " --image " + image("aspect_528x288.png"),
                    "config.image_token_id is required (the top-level config.json field; text_config's is not used)");
}

}  // namespace
}  // namespace staticlm
