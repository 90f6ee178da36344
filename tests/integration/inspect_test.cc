// `staticlm inspect` end to end on the tiny model: every step passes against the dynamic
// reference (text, and an image in both E2B profiles' fit mode); a copy with one layer's weight
// scaled fails against `model:` and the report names that layer first; the Hugging Face goldens
// pass the steps they hold; thresholds come from --set; bad input exits 2 with no report.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/half.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;

class Inspect : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --out " + dir_->file("m"));
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_EQ(made_.exit_code, 0) << made_.err; }
  static std::string model() { return dir_->file("m"); }
  static std::string file(const std::string& name) { return dir_->file(name); }
  static nlohmann::json read_report(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "no report at " << path;
    return nlohmann::json::parse(in);
  }
  static void expect_all_pass(const nlohmann::json& r) {
    EXPECT_TRUE(r.at("pass").get<bool>()) << r.dump(1);
    ASSERT_EQ(r.at("steps").size(), 8u);
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(r["steps"][i]["step"].get<int>(), i + 1);
      EXPECT_TRUE(r["steps"][i]["pass"].get<bool>()) << r["steps"][i].dump(1);
    }
    EXPECT_TRUE(r.at("first_divergent_layer").is_null());
  }
  static test::TempDir* dir_;
  static test::CommandResult made_;
};
test::TempDir* Inspect::dir_ = nullptr;
test::CommandResult Inspect::made_;

// A copy of the checkpoint with every value of `tensor` (BF16) multiplied by 2.
void write_scaled_copy(const std::string& from, const std::string& to, const std::string& tensor) {
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(from)) {
    if (e.path().filename() != "model.safetensors") fs::copy_file(e.path(), fs::path(to) / e.path().filename());
  }
  const auto in = SafetensorsFile::open(from + "/model.safetensors");
  std::vector<std::vector<std::uint16_t>> keep;
  SafetensorsWriter w;
  for (const std::string& name : in->names()) {
    TensorView v = in->get(name);
    if (name == tensor) {
      EXPECT_EQ(v.dtype, DType::kBF16);
      const auto* p = static_cast<const std::uint16_t*>(v.data);
      keep.emplace_back(p, p + v.shape.numel());
      for (std::uint16_t& x : keep.back()) x = f32_to_bf16(2.0f * bf16_to_f32(x));
      v.data = keep.back().data();
    }
    w.add(name, v);
  }
  for (const auto& [k, val] : in->metadata()) w.add_metadata(k, val);
  w.write(to + "/model.safetensors");
}

TEST_F(Inspect, TextPromptPassesEveryStepAgainstDynamic) {
  const auto r = test::run_staticlm("inspect -m " + model() + " -p 'The capital of France is' --max-seq 64 --report " +
                                    file("text.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = read_report(file("text.json"));
  expect_all_pass(j);
  EXPECT_EQ(j["steps"][2]["status"], "n/a");  // no image
  EXPECT_EQ(j["steps"][5]["layers"].size(), 6u);
  // The table: one row per step and the verdict.
  for (const char* name : {"inputs", "token_embedding", "vision_prefill", "mm_fusion", "masks_and_rope", "prefill",
                           "decode", "generation"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  EXPECT_NE(r.out.find("All checks passed."), std::string::npos) << r.out;
}

TEST_F(Inspect, ImagePromptPassesInBothProfilesFitMode) {
  for (const std::string profile : {"e2b_66x36_264", "e2b_57x42_266"}) {
    SCOPED_TRACE(profile);
    const std::string report = file("img_" + profile + ".json");
    const auto r = test::run_staticlm("inspect -m " + model() + " -p '<|image|>Describe the image.' --image " +
                                      test::fixture("static/photo_640x480.png") + " --set image_fit=fit --set vision_profile=" +
                                      profile + " --max-seq 300 --gen-steps 6 --report " + report);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = read_report(report);
    expect_all_pass(j);
    EXPECT_EQ(j["steps"][2]["status"], "pass");  // the vision step really ran
    EXPECT_GT(j["steps"][2]["metrics"]["cosine"].get<double>(), 0.999);
  }
}

TEST_F(Inspect, ModelReferenceNamesTheScaledLayer) {
  // The MLP's output norm: its scale reaches the residual directly (scaling down_proj instead
  // would be normalised away by that very norm).
  write_scaled_copy(model(), file("scaled"), "model.language_model.layers.3.post_feedforward_layernorm.weight");
  const auto r = test::run_staticlm("inspect -m " + model() + " -p 'The capital of France is' --max-seq 64 --reference model:" +
                                    file("scaled") + " --report " + file("scaled.json"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto j = read_report(file("scaled.json"));
  EXPECT_FALSE(j["pass"].get<bool>());
  EXPECT_EQ(j["first_divergent_layer"], 3) << j.dump(1);
  const auto& layers = j["steps"][5]["layers"];
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(layers[i]["pass"].get<bool>()) << i;
  EXPECT_FALSE(layers[3]["pass"].get<bool>());
  EXPECT_NE(r.out.find("first divergent decoder layer: 3"), std::string::npos) << r.out;
  // The same checkpoint as its own model: reference is identical, bit for bit.
  const auto same = test::run_staticlm("inspect -m " + model() + " -p 'Hello' --max-seq 32 --reference model:" + model() +
                                       " --report " + file("same.json"));
  ASSERT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_EQ(read_report(file("same.json"))["steps"][5]["metrics"]["max_abs"].get<double>(), 0.0);
}

// The committed goldens hold logits and tokens only (made before the inspector's tensors were
// added to tools/hf_golden.py): steps 1 and 6-8 pass; asking for step 2 fails naming what is missing.
TEST_F(Inspect, GoldenLogitsPassStepsTheyHold) {
  for (const std::string name : {"tiny_text_f32", "tiny_f32"}) {
    SCOPED_TRACE(name);
    const std::string golden = test::fixture("golden/" + name + ".safetensors");
    const auto meta = SafetensorsFile::open(golden)->metadata();
    const std::string m = file("g_" + name);
    const auto made = test::run_staticlm("make-model " + meta.at("make_model_args") + " --out " + m);
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const auto r = test::run_staticlm("inspect -m " + m + " --reference golden:" + golden + " --steps 1,6-8 --report " +
                                      file(name + ".json"));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = read_report(file(name + ".json"));
    EXPECT_TRUE(j["pass"].get<bool>());
    ASSERT_EQ(j["steps"].size(), 4u);
    EXPECT_EQ(j["steps"][2]["name"], "decode");
    EXPECT_EQ(j["steps"][2]["details"]["steps"].size(), 3u);  // the golden's 3 decode rows
    EXPECT_EQ(j["steps"][3]["metrics"]["token_agreement"].get<double>(), 1.0);
    const auto missing = test::run_staticlm("inspect -m " + m + " --reference golden:" + golden + " --steps 2");
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.out.find("has no token embeddings"), std::string::npos) << missing.out;
  }
}

TEST_F(Inspect, ThresholdsFromSetAndConfig) {
  // peir 0 is met only by a bit-identical result, which bf16 activation rounding in another
  // order does not give: step 6 fails on the threshold alone.
  const auto tight = test::run_staticlm("inspect -m " + model() + " -p 'Hello there' --max-seq 32 --steps 6 " +
                                        "--set inspect.thresholds.6.max_abs=0");
  EXPECT_EQ(tight.exit_code, 1) << tight.out << tight.err;
  EXPECT_NE(tight.out.find("expected max_abs<=0"), std::string::npos) << tight.out;
  std::ofstream(file("loose.yaml")) << "max_seq: 32\ninspect:\n  thresholds:\n    prefill: {max_abs: 1.0}\n";
  const auto loose = test::run_staticlm("inspect -m " + model() + " -p 'Hello there' --steps 6 --config " + file("loose.yaml"));
  EXPECT_EQ(loose.exit_code, 0) << loose.out << loose.err;
  EXPECT_NE(loose.out.find("max_abs<=1"), std::string::npos) << loose.out;
}

TEST_F(Inspect, BadInputExitsTwoWithoutReport) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--reference nonsense", "--reference nonsense: expected dynamic, model:DIR or golden:FILE.safetensors"},
      {"--reference model:" + file("nowhere"), "nowhere"},
      {"--reference golden:" + file("nowhere.safetensors"), "nowhere.safetensors"},
      {"--steps 0-9", "--steps 0-9"},
      {"--set inspect.thresholds.6.colour=1", "unknown metric 'colour'"},
      {"--set inspect.thresholds.12.peir=1", "unknown step '12'"},
      {"--decode-steps -1", "--decode-steps -1"},
      {"--prompt-ids 2,3", "at most one of"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const std::string report = file("bad.json");
    const auto r = test::run_staticlm("inspect -m " + model() + " --max-seq 32 -p hi " + c.args + " --report " + report);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(report));
  }
  // A model: reference of another architecture is refused by name.
  const auto text_only = test::run_staticlm("make-model --preset tiny --seed 1 --text-only --out " + file("t"));
  ASSERT_EQ(text_only.exit_code, 0);
  const auto other = test::run_staticlm("inspect -m " + model() + " -p hi --max-seq 32 --reference model:" + file("t"));
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("vision tower"), std::string::npos) << other.err;
}

TEST_F(Inspect, RecordsTheStaticSide) {
  const auto r = test::run_staticlm("inspect -m " + model() + " -p 'Hello' --max-seq 32 --gen-steps 2 --decode-steps 1 --record " +
                                    file("rec"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream in(file("rec") + "/index.json");
  const auto index = nlohmann::json::parse(in);
  bool prefill = false, decode = false;
  for (const auto& c : index["calls"]) {
    prefill |= c["graph"] == "decoder_layer_prefill_0";
    decode |= c["graph"] == "decoder_layer_decode_5";
  }
  EXPECT_TRUE(prefill && decode);
  const auto replay = test::run_staticlm("replay --record " + file("rec"));
  EXPECT_EQ(replay.exit_code, 0) << replay.out << replay.err;
}

}  // namespace
}  // namespace staticlm
