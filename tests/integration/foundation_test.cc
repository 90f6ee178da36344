// The foundation end to end: make-model writes a complete checkpoint that loads and validates,
// deterministically; broken checkpoints are refused by name; info reports the layer table.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/weights.h"
#include "test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;

// One tiny model per test binary run, made through the CLI like a user would.
class TinyModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --out " + dir_->file("a"));
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
    ASSERT_EQ(made_.exit_code, 0) << made_.err;
  }
  static std::string model() { return dir_->file("a"); }
  static test::TempDir* dir_;
  static test::CommandResult made_;
};
test::TempDir* TinyModel::dir_ = nullptr;
test::CommandResult TinyModel::made_;

TEST_F(TinyModel, WritesEveryFileOfTheHuggingFaceLayout) {
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                        "tokenizer_config.json", "chat_template.jinja", "preprocessor_config.json",
                        "processor_config.json"}) {
    EXPECT_TRUE(file_exists(model() + "/" + f)) << f;
  }
  auto tc = nlohmann::json::parse(read_file(model() + "/tokenizer_config.json"));
  EXPECT_EQ(tc["add_bos_token"], false);
  auto gc = nlohmann::json::parse(read_file(model() + "/generation_config.json"));
  EXPECT_EQ(gc["eos_token_id"], nlohmann::json({1, 106, 50}));
}

TEST_F(TinyModel, SameSeedGivesByteIdenticalFiles) {
  auto again = test::run_staticlm("make-model --preset tiny --seed 1 --out " + dir_->file("b"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  for (const auto& entry : fs::directory_iterator(model())) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(read_file(entry.path().string()) == read_file(dir_->file("b/" + name))) << name << " differs";
  }
  auto other = test::run_staticlm("make-model --preset tiny --seed 2 --out " + dir_->file("c"));
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_FALSE(read_file(model() + "/model.safetensors") == read_file(dir_->file("c/model.safetensors")));
  fs::remove_all(dir_->file("b"));
  fs::remove_all(dir_->file("c"));
}

TEST_F(TinyModel, LoadsAndValidates) {
  auto ck = Checkpoint::open(model());
  const ModelConfig& c = ck->config();
  EXPECT_TRUE(c.multimodal());
  EXPECT_EQ(c.text.vocab_size, 262144);
  EXPECT_EQ(c.text.num_hidden_layers, 6);
  ASSERT_TRUE(c.vision.has_value());
  EXPECT_EQ(c.vision->patch_size, 16);
  EXPECT_EQ(c.vision->pooling_kernel_size, 3);
  EXPECT_EQ(c.vision->default_output_length, 280);
  ASSERT_EQ(ck->layers().size(), 6u);
  // Layers 4 (sliding) and 5 (full, the last) read K/V from the last owner of their type.
  EXPECT_EQ(ck->layers()[4].kv_source, 3);
  EXPECT_EQ(ck->layers()[5].kv_source, 2);
  EXPECT_EQ(ck->layers()[5].type, kFullAttention);
  EXPECT_EQ(ck->layers()[5].intermediate_size, 2 * ck->layers()[0].intermediate_size);
  EXPECT_EQ(ck->layers()[2].head_dim, 2 * ck->layers()[0].head_dim);
  // The parameter count from the config equals the elements actually in the file.
  std::int64_t in_file = 0;
  for (const auto& name : ck->weights().names()) in_file += ck->weights().get(name).numel();
  EXPECT_EQ(count_parameters(c).total(), in_file);
}

// Weights are drawn in realistic ranges: norms near 1, projections with std 1/sqrt(fan_in).
TEST_F(TinyModel, WeightsHaveRealisticScales) {
  auto ck = Checkpoint::open(model());
  const auto stats = [&](const std::string& name) {
    TensorView v = ck->weights().get(name);
    double sum = 0, sq = 0;
    for (std::int64_t i = 0; i < v.numel(); ++i) {
      const double x = v.get_f32(i);
      sum += x;
      sq += x * x;
    }
    const double mean = sum / v.numel();
    return std::pair<double, double>(mean, std::sqrt(sq / v.numel() - mean * mean));
  };
  const std::string p = "model.language_model.";
  auto [norm_mean, norm_std] = stats(p + "layers.0.input_layernorm.weight");
  EXPECT_NEAR(norm_mean, 1.0, 0.03);
  EXPECT_GT(norm_std, 0.01);  // not all ones
  auto [q_mean, q_std] = stats(p + "layers.0.self_attn.q_proj.weight");
  EXPECT_NEAR(q_mean, 0.0, 0.02);
  EXPECT_NEAR(q_std, 1.0 / std::sqrt(64.0), 0.01);
  auto [d_mean, d_std] = stats(p + "layers.5.mlp.down_proj.weight");
  EXPECT_NEAR(d_std, 1.0 / std::sqrt(256.0), 0.005);
  (void)d_mean;
  auto [e_mean, e_std] = stats(p + "embed_tokens.weight");
  EXPECT_NEAR(e_std * std::sqrt(64.0), 1.0, 0.02);  // sqrt(hidden) * E has unit scale
  (void)e_mean;
  auto [s_mean, s_std] = stats(p + "layers.3.layer_scalar");
  EXPECT_NEAR(s_mean, 1.0, 0.05);
  (void)s_std;
}

// Rewrites the tiny checkpoint with one tensor dropped or reshaped.
std::string broken_copy(const std::string& src, const std::string& dst, const std::string& victim, bool reshape) {
  fs::create_directories(dst);
  fs::copy_file(src + "/config.json", dst + "/config.json");
  auto store = TensorStore::open_dir(src);
  SafetensorsWriter w;
  for (const auto& name : store->names()) {
    TensorView v = store->get(name);
    if (name == victim) {
      if (!reshape) continue;
      Shape s = v.shape;
      s[0] -= 1;
      w.add(name, v.dtype, s, [v, s](ByteSink& sink) { sink.write(v.data, dtype_bytes(v.dtype, s.numel())); });
      continue;
    }
    w.add(name, v);
  }
  w.write(dst + "/model.safetensors");
  return dst;
}

TEST_F(TinyModel, MissingTensorIsRefusedByName) {
  const std::string victim = "model.language_model.layers.2.self_attn.k_norm.weight";
  const std::string dir = broken_copy(model(), dir_->file("missing"), victim, false);
  try {
    Checkpoint::open(dir);
    FAIL() << "opened a checkpoint with a missing tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
  }
  auto r = test::run_staticlm("info -m " + dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: "), std::string::npos);
  EXPECT_NE(r.err.find(victim), std::string::npos) << r.err;
}

TEST_F(TinyModel, WrongShapeIsRefusedByName) {
  const std::string victim = "model.language_model.layers.4.mlp.up_proj.weight";
  const std::string dir = broken_copy(model(), dir_->file("reshaped"), victim, true);
  try {
    Checkpoint::open(dir);
    FAIL() << "opened a checkpoint with a wrong shape";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(victim), std::string::npos) << msg;
    EXPECT_NE(msg.find("[255, 64]"), std::string::npos) << msg;  // the actual shape
    EXPECT_NE(msg.find("[256, 64]"), std::string::npos) << msg;  // the expected one
  }
}

TEST_F(TinyModel, InfoJsonOnTheTinyModel) {
  auto r = test::run_staticlm("info -m " + model() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["layers"].size(), 6u);
  EXPECT_EQ(j["layers"][4]["kv_source"], 3);
  EXPECT_EQ(j["weights"], "ok");
}

TEST(TextOnlyModel, UsesTheCausalLmLayout) {
  if (test::gemma3_tokenizer_path().empty()) GTEST_SKIP() << "tokenizer not fetched";
  test::TempDir dir;
  auto r = test::run_staticlm("make-model --preset tiny --seed 3 --text-only --dtype f32 --out " + dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto ck = Checkpoint::open(dir.path());
  EXPECT_FALSE(ck->config().multimodal());
  EXPECT_EQ(ck->config().model_type, "gemma4_text");
  EXPECT_FALSE(ck->config().vision.has_value());
  EXPECT_TRUE(ck->weights().contains("model.embed_tokens.weight"));
  EXPECT_EQ(ck->weights().get("model.embed_tokens.weight").dtype, DType::kF32);
  for (const auto& name : ck->weights().names()) EXPECT_EQ(name.find("vision"), std::string::npos) << name;
  EXPECT_FALSE(file_exists(dir.file("preprocessor_config.json")));
}

// --init tame draws q_norm / k_norm near head_dim^-1/4 (text and vision) and changes nothing
// else; the default (uniform) keeps them near 1.
TEST(MakeModelInit, TameScalesOnlyTheQueryAndKeyNorms) {
  if (test::gemma3_tokenizer_path().empty()) GTEST_FAIL() << "tokenizer not fetched: run scripts/setup.sh";
  test::TempDir dir;
  auto r = test::run_staticlm("make-model --preset tiny --seed 2 --dtype f32 --out " + dir.file("u"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_staticlm("make-model --preset tiny --seed 2 --dtype f32 --init tame --out " + dir.file("t"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto u = Checkpoint::open(dir.file("u")), t = Checkpoint::open(dir.file("t"));
  int scaled = 0;
  for (const auto& name : u->weights().names()) {
    const TensorView a = u->weights().get(name), b = t->weights().get(name);
    ASSERT_EQ(a.shape, b.shape) << name;
    const bool qk = name.ends_with("q_norm.weight") || name.ends_with("k_norm.weight");
    double mean_a = 0, mean_b = 0;
    for (std::int64_t i = 0; i < a.shape.numel(); ++i) mean_a += a.get_f32(i), mean_b += b.get_f32(i);
    mean_a /= static_cast<double>(a.shape.numel());
    mean_b /= static_cast<double>(b.shape.numel());
    if (!qk) {
      EXPECT_EQ(mean_a, mean_b) << name;
      continue;
    }
    ++scaled;
    EXPECT_NEAR(mean_a, 1.0, 0.03) << name;
    EXPECT_NEAR(mean_b, std::pow(static_cast<double>(a.shape[0]), -0.25), 0.03 * mean_b) << name;
  }
  EXPECT_GE(scaled, 12);  // q and k norms of the 6 text layers, and the vision tower's
}

// spec/gemma4.md 1.2: E2B's layer table, from a directory holding only config.json.
TEST(InfoE2B, ReportsTheE2BLayerTable) {
  test::TempDir dir;
  write_text_atomic(dir.file("config.json"), model_config_to_json(preset_config("e2b", false)));
  auto r = test::run_staticlm("info -m " + dir.path() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["layers"].size(), 35u);
  for (int i = 0; i < 35; ++i) {
    const auto& l = j["layers"][i];
    const bool full = i % 5 == 4;
    EXPECT_EQ(l["index"], i);
    EXPECT_EQ(l["type"], full ? "full_attention" : "sliding_attention") << i;
    EXPECT_EQ(l["head_dim"], full ? 512 : 256) << i;
    EXPECT_EQ(l["intermediate_size"], i < 15 ? 6144 : 12288) << i;
    EXPECT_EQ(l["kv_source"], i < 15 ? i : (full ? 14 : 13)) << i;
  }
  EXPECT_EQ(j["weights"], "absent");
  EXPECT_GT(j["num_parameters"].get<std::int64_t>(), 4'000'000'000);
  auto text = test::run_staticlm("info -m " + dir.path());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("layer 14"), std::string::npos);
}

TEST(MakeModelErrors, ClearMessagesAndNoOutput) {
  test::TempDir dir;
  auto r = test::run_staticlm("make-model --preset huge --out " + dir.file("m"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--preset: unknown preset \"huge\", expected tiny or e2b"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("m")));
  r = test::run_staticlm("make-model --preset tiny --out " + dir.file("m") + " --tokenizer-from " + dir.file("none.json"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("none.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("m")));
  r = test::run_staticlm("make-model --preset tiny --dtype q4 --out " + dir.file("m"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dtype"), std::string::npos) << r.err;
  r = test::run_staticlm("make-model --preset tiny --init warm --out " + dir.file("m"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--init: \"warm\" is not a weight init, expected tame or uniform"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("m")));
  r = test::run_staticlm("make-model --preset tiny");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  r = test::run_staticlm("info -m " + dir.file("nowhere"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
  r = test::run_staticlm("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Cli, HelpListsTheSubcommands) {
  auto r = test::run_staticlm("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("make-model"), std::string::npos);
  EXPECT_NE(r.out.find("info"), std::string::npos);
}

}  // namespace
}  // namespace staticlm
