// `staticlm run --record DIR` and `staticlm replay --record DIR` on the tiny model: an image run
// records every subgraph call (vision, fusion, embeddings, every prefill and decode layer,
// lm_head) and replays bit-exactly on the CPU backend; a recording with a missing or reshaped
// tensor, or a broken index, is refused by name (exit 2); a changed output fails (exit 1) naming
// the call; --graph replays one graph; recording does not change what run generates.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "inspect/recorder.h"
#include "tensor/safetensors.h"
#include "tensor/tensor.h"
#include "test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kLayers = 6;  // the tiny preset

class Replay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    test::make_tiny_model(dir_->file("m"), 1);
    image_run_ = new test::CommandResult(test::run_staticlm(image_args() + " --record " + dir_->file("img")));
    text_run_ = new test::CommandResult(test::run_staticlm(text_args() + " --record " + dir_->file("txt")));
  }
  static void TearDownTestSuite() {
    delete image_run_;
    delete text_run_;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
    ASSERT_EQ(image_run_->exit_code, 0) << image_run_->err;
    ASSERT_EQ(text_run_->exit_code, 0) << text_run_->err;
  }

  // A 270-token image prompt (the default e2b_66x36_264 profile, image fitted to it) in a
  // 300-slot static sequence, 3 tokens generated.
  static std::string image_args() {
    return "run -m " + dir_->file("m") + " --image " + test::fixture("images/gradient.png") +
           " --set image_fit=fit --max-seq 300 -p '<|image|>Describe the image.' -n 3 --threads 2";
  }
  static std::string text_args() {
    return "run -m " + dir_->file("m") + " --max-seq 32 -p 'The quick brown fox' -n 4 --threads 2";
  }
  static json index(const std::string& rec) { return json::parse(read_file(rec + "/index.json")); }
  static json calls_of(const std::string& rec) { return index(rec).at("calls"); }
  // A copy of a recording that a test may damage.
  static std::string copy_of(const std::string& rec, const std::string& name) {
    const std::string out = dir_->file(name);
    fs::remove_all(out);
    fs::copy(rec, out, fs::copy_options::recursive);
    return out;
  }
  // The file of the first call of `graph` in a recording.
  static std::string file_of(const std::string& rec, const std::string& graph) {
    for (const json& c : calls_of(rec)) {
      if (c.at("graph") == graph) return rec + "/" + c.at("file").get<std::string>();
    }
    ADD_FAILURE() << "no call of " << graph << " in " << rec;
    return "";
  }
  // Rewrites a safetensors file through edit (name -> tensor; erase to drop one).
  static void rewrite(const std::string& path, const std::function<void(std::map<std::string, Tensor>&)>& edit) {
    std::map<std::string, Tensor> tensors;
    std::map<std::string, std::string> meta;
    {
      const auto f = SafetensorsFile::open(path);
      for (const std::string& n : f->names()) tensors[n] = Tensor::copy_of(f->get(n));
      meta = f->metadata();
    }
    edit(tensors);
    SafetensorsWriter w;
    for (const auto& [n, t] : tensors) w.add(n, t.view());
    for (const auto& [k, v] : meta) w.add_metadata(k, v);
    w.write(path);
  }

  static test::TempDir* dir_;
  static test::CommandResult* image_run_;
  static test::CommandResult* text_run_;
};
test::TempDir* Replay::dir_ = nullptr;
test::CommandResult* Replay::image_run_ = nullptr;
test::CommandResult* Replay::text_run_ = nullptr;

TEST_F(Replay, ImageRunRecordsEveryGraphCall) {
  const std::string rec = dir_->file("img");
  const json j = index(rec);
  EXPECT_EQ(j.at("format"), "staticlm-record");
  EXPECT_EQ(j.at("version"), 1);
  const json& setup = j.at("setup");
  EXPECT_EQ(setup.at("model_dir"), fs::absolute(dir_->file("m")).lexically_normal().string());
  EXPECT_EQ(setup.at("backend"), "cpu");
  EXPECT_EQ(setup.at("profile").at("max_seq"), 300);
  EXPECT_EQ(setup.at("profile").at("visual_start_idx"), 1);
  EXPECT_EQ(setup.at("profile").at("num_visual_tokens"), 264);
  EXPECT_EQ(setup.at("profile").at("num_patches"), 2520);
  EXPECT_EQ(setup.at("profile").at("patch_grid_height"), 36);
  EXPECT_EQ(setup.at("profile").at("patch_grid_width"), 66);
  EXPECT_EQ(setup.at("cpu").at("bf16_activations"), true);
  EXPECT_FALSE(setup.at("cpu").at("kernel_target").get<std::string>().empty());

  std::map<std::string, int> count;
  std::int64_t expect_index = 0;
  for (const json& c : j.at("calls")) {
    const std::string graph = c.at("graph");
    ++count[graph];
    EXPECT_EQ(c.at("index"), expect_index);  // every call of the run, in order
    EXPECT_EQ(c.at("file"), inspect::call_file_name(expect_index, graph));
    EXPECT_TRUE(file_exists(rec + "/" + c.at("file").get<std::string>()));
    ++expect_index;
  }
  EXPECT_EQ(count["vision_prefill"], 1);
  EXPECT_EQ(count["multimodal_fusion_prefill"], 1);
  EXPECT_GE(count["token_embedding"], 1);
  EXPECT_GE(count["ple_embedding"], 1);
  for (int i = 0; i < kLayers; ++i) {
    EXPECT_EQ(count["decoder_layer_prefill_" + std::to_string(i)], 1) << i;
    EXPECT_EQ(count["decoder_layer_decode_" + std::to_string(i)], 2) << i;  // 3 tokens: 2 decode steps
  }
  EXPECT_EQ(count["lm_head"], 3);
  EXPECT_NE(image_run_->err.find("recorded " + std::to_string(expect_index) + " subgraph calls"), std::string::npos)
      << image_run_->err;

  // One call file: inputs and outputs by name, with the shapes passed.
  EXPECT_EQ(fs::path(file_of(rec, "vision_prefill")).filename().string().substr(6), "_vision_prefill.safetensors");
  EXPECT_EQ(inspect::call_file_name(3, "decoder_layer_prefill_0"), "000003_decoder_layer_prefill_0.safetensors");
  const auto v = SafetensorsFile::open(file_of(rec, "vision_prefill"));
  EXPECT_EQ(v->names().size(), 2u);
  EXPECT_EQ(v->get("in.pixel_values").shape, (Shape{1, 2520, 768}));
  EXPECT_EQ(v->get("out.image_embeds").shape, (Shape{264, 64}));
  EXPECT_EQ(v->metadata().at("graph"), "vision_prefill");
  const auto p = SafetensorsFile::open(file_of(rec, "decoder_layer_prefill_0"));
  EXPECT_EQ(p->get("in.attention_mask").shape, (Shape{1, 1, 300, 300}));
  EXPECT_EQ(p->get("in.hidden_states").dtype, DType::kF32);
  EXPECT_TRUE(p->contains("out.hidden_states"));
  EXPECT_TRUE(p->contains("in.cos"));
}

TEST_F(Replay, ImageRecordingReplaysBitExactOnTheCpuBackend) {
  const std::string rec = dir_->file("img");
  const auto r = test::run_staticlm("replay --record " + rec + " --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::size_t calls = index(rec).at("calls").size();
  EXPECT_NE(r.out.find("replayed " + std::to_string(calls) + " calls, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; pass"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" no\n"), std::string::npos) << r.out;  // the bit-exact column

  const auto js = test::run_staticlm("replay --record " + rec + " --threads 1 --json --report " + dir_->file("rep.json"));
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json rep = json::parse(js.out);
  EXPECT_EQ(rep, json::parse(read_file(dir_->file("rep.json"))));
  EXPECT_EQ(rep.at("calls").size(), calls);
  const json& s = rep.at("summary");
  EXPECT_EQ(s.at("calls"), calls);
  EXPECT_GT(s.at("outputs").get<int>(), static_cast<int>(calls));  // layers have 3 outputs
  EXPECT_EQ(s.at("bit_exact"), s.at("outputs"));
  EXPECT_EQ(s.at("pass"), true);
  for (const json& c : rep.at("calls")) {
    for (const json& o : c.at("outputs")) {
      EXPECT_EQ(o.at("max_abs"), 0.0) << c.dump();
      EXPECT_NEAR(o.at("cosine").get<double>(), 1.0, 1e-12) << c.dump();
      EXPECT_EQ(o.at("bit_exact"), true) << c.dump();
    }
  }
}

TEST_F(Replay, RecordingDoesNotChangeWhatRunGenerates) {
  const auto plain_image = test::run_staticlm(image_args());
  ASSERT_EQ(plain_image.exit_code, 0) << plain_image.err;
  EXPECT_EQ(plain_image.out, image_run_->out);
  EXPECT_EQ(plain_image.err.find("recorded "), std::string::npos);
  const auto plain_text = test::run_staticlm(text_args());
  ASSERT_EQ(plain_text.exit_code, 0) << plain_text.err;
  EXPECT_EQ(plain_text.out, text_run_->out);
  EXPECT_FALSE(plain_text.out.empty());
}

TEST_F(Replay, RecordIntoANonEmptyDirectoryIsRefused) {
  const auto r = test::run_staticlm(text_args() + " --record " + dir_->file("txt"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: --record " + dir_->file("txt") + ": the directory exists and is not empty"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");  // refused before generating
  const auto g = test::run_staticlm(text_args() + " --record-graph lm_head");
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_NE(g.err.find("--record-graph goes with --record"), std::string::npos) << g.err;
}

TEST_F(Replay, RecordGraphRecordsOnlyThoseGraphs) {
  const std::string rec = dir_->file("only");
  const auto r = test::run_staticlm(text_args() + " --record " + rec + " --record-graph lm_head --record-graph decoder_layer_decode_1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, text_run_->out);
  std::set<std::string> graphs;
  for (const json& c : calls_of(rec)) graphs.insert(c.at("graph"));
  EXPECT_EQ(graphs, (std::set<std::string>{"lm_head", "decoder_layer_decode_1"}));
  const auto rp = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(rp.exit_code, 0) << rp.out << rp.err;
  const auto unrecorded = test::run_staticlm("replay --record " + rec + " --graph decoder_layer_prefill");
  EXPECT_EQ(unrecorded.exit_code, 2);
  EXPECT_NE(unrecorded.err.find("error: --graph decoder_layer_prefill: the recording " + rec + " has no call of that graph"),
            std::string::npos)
      << unrecorded.err;
}

TEST_F(Replay, GraphReplaysOnlyThatGraphOrPrefix) {
  const std::string rec = dir_->file("txt");
  std::size_t lm_heads = 0, prefill_layers = 0;
  for (const json& c : calls_of(rec)) {
    lm_heads += c.at("graph") == "lm_head" ? 1 : 0;
    prefill_layers += c.at("graph").get<std::string>().rfind("decoder_layer_prefill_", 0) == 0 ? 1 : 0;
  }
  ASSERT_EQ(lm_heads, 4u);
  const auto r = test::run_staticlm("replay --record " + rec + " --graph lm_head --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json rep = json::parse(r.out);
  ASSERT_EQ(rep.at("calls").size(), lm_heads);
  for (const json& c : rep.at("calls")) EXPECT_EQ(c.at("graph"), "lm_head");
  EXPECT_NE(r.err.find("replayed 4 calls, 4 outputs: 4 bit-exact; pass"), std::string::npos) << r.err;

  const auto pre = test::run_staticlm("replay --record " + rec + " --graph decoder_layer_prefill --json");
  ASSERT_EQ(pre.exit_code, 0) << pre.err;
  EXPECT_EQ(json::parse(pre.out).at("calls").size(), prefill_layers);
  const auto one = test::run_staticlm("replay --record " + rec + " --graph decoder_layer_prefill_1 --json");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(json::parse(one.out).at("calls").size(), 1u);

  const auto unknown = test::run_staticlm("replay --record " + rec + " --graph lm_tail");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("error: --graph lm_tail: no subgraph of the cpu backend has that name or prefix"),
            std::string::npos)
      << unknown.err;
}

TEST_F(Replay, AMissingTensorIsRefusedByName) {
  const std::string rec = copy_of(dir_->file("img"), "missing");
  const std::string file = file_of(rec, "decoder_layer_prefill_2");
  rewrite(file, [](std::map<std::string, Tensor>& t) { ASSERT_EQ(t.erase("in.cos"), 1u); });
  const auto r = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: " + file + ": missing tensor in.cos\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");  // refused before any call runs

  const std::string out_file = file_of(rec, "lm_head");
  rewrite(out_file, [](std::map<std::string, Tensor>& t) { ASSERT_EQ(t.erase("out.logits"), 1u); });
  const auto o = test::run_staticlm("replay --record " + rec + " --graph lm_head");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("error: " + out_file + ": missing tensor out.logits\n"), std::string::npos) << o.err;

  const std::string img = file_of(rec, "vision_prefill");
  fs::remove(img);
  const auto gone = test::run_staticlm("replay --record " + rec + " --graph vision_prefill");
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_NE(gone.err.find("error: " + img + ": missing"), std::string::npos) << gone.err;
}

TEST_F(Replay, AReshapedOrRetypedTensorIsRefusedByName) {
  const std::string rec = copy_of(dir_->file("img"), "reshaped");
  const std::string file = file_of(rec, "decoder_layer_prefill_0");
  rewrite(file, [](std::map<std::string, Tensor>& t) {
    Tensor cut(DType::kF32, Shape{1, 1, 300, 299});  // one key column fewer
    t["in.attention_mask"] = std::move(cut);
  });
  const auto r = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("error: " + file + ": tensor in.attention_mask: shape [1, 1, 300, 299], expected [1, 1, 300, 300]\n"),
            std::string::npos)
      << r.err;

  const std::string emb = file_of(rec, "token_embedding");
  rewrite(emb, [](std::map<std::string, Tensor>& t) {
    const Tensor& ids = t.at("in.input_ids");
    t["in.input_ids"] = Tensor(DType::kI32, ids.shape());
  });
  const auto d = test::run_staticlm("replay --record " + rec + " --graph token_embedding");
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find("error: " + emb + ": tensor in.input_ids: dtype I32, expected I64\n"), std::string::npos) << d.err;
}

// A value the graph refuses is found only as that call runs; the error names the call's file.
TEST_F(Replay, AnIdOutsideTheVocabularyIsRefusedNamingTheFile) {
  const std::string rec = copy_of(dir_->file("txt"), "oov");
  const std::string emb = file_of(rec, "token_embedding");
  rewrite(emb, [](std::map<std::string, Tensor>& t) { t.at("in.input_ids").as<std::int64_t>()[0] = 999999999; });
  const auto r = test::run_staticlm("replay --record " + rec + " --graph token_embedding");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("error: " + emb + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("999999999"), std::string::npos) << r.err;
}

TEST_F(Replay, ABrokenIndexIsRefused) {
  const std::string rec = copy_of(dir_->file("txt"), "broken");
  write_text_atomic(rec + "/index.json", "{\"format\": \"staticlm-record\", \"version\": 1, \"calls\": [");
  const auto bad = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("error: " + rec + "/index.json: not valid JSON"), std::string::npos) << bad.err;

  json j = index(dir_->file("txt"));
  j["version"] = 2;
  write_text_atomic(rec + "/index.json", j.dump());
  const auto ver = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(ver.exit_code, 2);
  EXPECT_NE(ver.err.find("index.json: version 2, this staticlm reads version 1"), std::string::npos) << ver.err;

  j["version"] = 1;
  j["format"] = "something-else";
  write_text_atomic(rec + "/index.json", j.dump());
  const auto fmt = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(fmt.exit_code, 2);
  EXPECT_NE(fmt.err.find("index.json: format \"something-else\", expected \"staticlm-record\""), std::string::npos)
      << fmt.err;

  j["format"] = "staticlm-record";
  j["setup"]["profile"].erase("max_seq");
  write_text_atomic(rec + "/index.json", j.dump());
  const auto field = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(field.exit_code, 2);
  EXPECT_NE(field.err.find("index.json: setup.profile: missing field \"max_seq\""), std::string::npos) << field.err;

  j["setup"] = index(dir_->file("txt")).at("setup");
  j["calls"] = json::array();
  write_text_atomic(rec + "/index.json", j.dump());
  const auto empty = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(empty.exit_code, 2) << empty.out;
  EXPECT_NE(empty.err.find("index.json: no calls (every run records at least one)"), std::string::npos) << empty.err;
  j["calls"] = index(dir_->file("txt")).at("calls");

  // Numbers a backend would be sized by are checked first (a huge one asked for terabytes).
  const json setup = index(dir_->file("txt")).at("setup");
  for (const auto& [key, value, says] :
       {std::tuple{"max_seq", std::int64_t{1} << 40, "max_seq 1099511627776, expected 1 to 2147483648"},
        {"num_patches", std::int64_t{-1}, "num_patches -1, expected 0 to 2147483648"},
        {"patch_grid_width", std::int64_t{4}, "a patch grid of 4 x 4 does not fit in num_patches 0"}}) {
    j["setup"] = setup;
    j["setup"]["profile"]["patch_grid_height"] = 4;  // the text recording's profile has no patches
    j["setup"]["profile"][key] = value;
    write_text_atomic(rec + "/index.json", j.dump());
    const auto r = test::run_staticlm("replay --record " + rec);
    EXPECT_EQ(r.exit_code, 2) << key;
    EXPECT_NE(r.err.find("index.json: setup.profile: " + std::string(says)), std::string::npos) << r.err;
  }

  fs::remove(rec + "/index.json");
  const auto none = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("error: " + rec + "/index.json: missing"), std::string::npos) << none.err;
}

TEST_F(Replay, AChangedOutputFailsNamingTheCall) {
  const std::string rec = copy_of(dir_->file("txt"), "changed");
  std::vector<json> heads;
  for (const json& c : calls_of(rec)) {
    if (c.at("graph") == "lm_head") heads.push_back(c);
  }
  ASSERT_GE(heads.size(), 2u);
  // The second lm_head call: the logits of the first decode step.
  const std::int64_t call = heads[1].at("index");
  const std::string file = rec + "/" + heads[1].at("file").get<std::string>();
  rewrite(file, [](std::map<std::string, Tensor>& t) { t.at("out.logits").as<float>()[7] += 1e-3f; });
  const auto r = test::run_staticlm("replay --record " + rec);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAIL: 1 output not bit-exact (call " + std::to_string(call) + " lm_head logits)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("error:"), std::string::npos) << r.err;

  // Within a PEIR tolerance (as for another backend), the same recording passes.
  const auto tol = test::run_staticlm("replay --record " + rec + " --tolerance 1e-3");
  EXPECT_EQ(tol.exit_code, 0) << tol.out << tol.err;
  EXPECT_NE(tol.out.find("within PEIR 0.001; pass"), std::string::npos) << tol.out;
  const auto neg = test::run_staticlm("replay --record " + rec + " --tolerance -1");
  EXPECT_EQ(neg.exit_code, 2);
}

}  // namespace
}  // namespace staticlm
