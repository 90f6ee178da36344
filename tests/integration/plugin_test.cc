// Back-end plug-ins end to end on the tiny model (docs/backends.md): the in-tree CPU plug-in
// gives the same bits as the in-process CPU back end (text and image generation, logits dumps,
// inspect); the partial plug-in with --fallback cpu gives them too and says where each graph
// ran, and is refused without it; the loader refuses broken plug-ins with their message; and
// backend-check passes the CPU plug-in and names the graph a faulty plug-in gets wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "runtime/logits_dump.h"
#include "test_util.h"

namespace staticlm {
namespace {

using json = nlohmann::json;

const std::string kCpuPlugin = std::string(STATICLM_PLUGIN_DIR) + "/libstaticlm_cpu_plugin.so";
const std::string kPartialPlugin = std::string(STATICLM_PLUGIN_DIR) + "/libstaticlm_partial_plugin.so";
std::string test_plugin(const std::string& name) {
  std::string path = STATICLM_TEST_PLUGIN_DIR;  // appended, not a + chain: GCC 12 warned falsely of bounds
  path += "/libtest_plugin_";
  path += name;
  return path + ".so";
}

class Plugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    test::make_tiny_model(dir_->file("m"), 1);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
  }
  static std::string model() { return dir_->file("m"); }
  static std::string file(const std::string& name) { return dir_->file(name); }

  static std::string text_run() { return "run -m " + model() + " --max-seq 32 -p 'The quick brown fox' -n 6 --threads 2"; }
  static std::string image_run() {
    return "run -m " + model() + " --image " + test::fixture("images/gradient.png") +
           " --set image_fit=fit --max-seq 300 -p '<|image|>Describe the image.' -n 3 --threads 2";
  }
  // Runs `args` with a logits dump named `name`; returns the result and the dump's bytes.
  static std::pair<test::CommandResult, std::string> dumped(const std::string& args, const std::string& name) {
    const std::string dump = file(name + ".safetensors");
    const auto r = test::run_staticlm(args + " --dump-logits " + dump);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return {r, r.exit_code == 0 ? read_file(dump) : ""};
  }
  static test::TempDir* dir_;
};
test::TempDir* Plugin::dir_ = nullptr;

// The last line of stderr: the one "error: ..." line of a refused command.
// Where two logits dumps differ (for a failure message): each tensor's count of differing values,
// the first one and the largest difference. "" when they are equal.
std::string dump_difference(const std::string& a_path, const std::string& b_path) {
  const LogitsDump a = read_logits_dump(a_path), b = read_logits_dump(b_path);
  std::ostringstream out;
  if (a.tokens != b.tokens) out << "tokens differ; ";
  const auto compare = [&](const char* name, const std::vector<float>& x, const std::vector<float>& y) {
    if (x.size() != y.size()) {
      out << name << ": " << x.size() << " against " << y.size() << " values; ";
      return;
    }
    std::size_t count = 0, first = 0;
    float largest = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::memcmp(&x[i], &y[i], sizeof(float)) == 0) continue;
      if (count++ == 0) first = i;
      largest = std::max(largest, std::abs(x[i] - y[i]));
    }
    if (count > 0) {
      out << name << ": " << count << " of " << x.size() << " differ, first at " << first << " (" << x[first]
          << " against " << y[first] << "), largest " << largest << "; ";
    }
  };
  compare("prefill_logits", a.prefill_logits, b.prefill_logits);
  compare("decode_logits", a.decode_logits, b.decode_logits);
  compare("vision_embeds", a.vision_embeds, b.vision_embeds);
  return out.str();
}

std::string last_line(const std::string& err) {
  std::string s = err;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') == std::string::npos ? 0 : s.rfind('\n') + 1);
}

TEST_F(Plugin, CpuPluginGenerationIsBitIdentical) {
  const auto [cpu, cpu_dump] = dumped(text_run(), "text_cpu");
  const auto [plug, plug_dump] = dumped(text_run() + " --backend plugin:" + kCpuPlugin + ":threads=2", "text_plugin");
  EXPECT_EQ(plug.out, cpu.out);
  EXPECT_FALSE(cpu_dump.empty());
  EXPECT_TRUE(plug_dump == cpu_dump) << "the logits dumps differ: "
                                     << dump_difference(file("text_cpu.safetensors"), file("text_plugin.safetensors"));
  EXPECT_NE(plug.err.find("backend: plugin:libstaticlm_cpu_plugin.so ran token_embedding"), std::string::npos) << plug.err;
}

TEST_F(Plugin, CpuPluginImageRunIsBitIdentical) {
  const auto [cpu, cpu_dump] = dumped(image_run(), "image_cpu");
  const auto [plug, plug_dump] = dumped(image_run() + " --backend plugin:" + kCpuPlugin + ":threads=2", "image_plugin");
  EXPECT_EQ(plug.out, cpu.out);
  EXPECT_TRUE(plug_dump == cpu_dump) << "the logits dumps (with the image rows) differ: "
                                     << dump_difference(file("image_cpu.safetensors"), file("image_plugin.safetensors"));
  EXPECT_NE(plug.err.find("vision_prefill"), std::string::npos) << plug.err;
}

TEST_F(Plugin, CpuPluginInspectReportIsIdentical) {
  const std::string args = "inspect -m " + model() + " -p 'The capital of France is' --max-seq 64 --threads 2 --report ";
  const auto cpu = test::run_staticlm(args + file("inspect_cpu.json"));
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto plug = test::run_staticlm(args + file("inspect_plugin.json") + " --backend plugin:" + kCpuPlugin + ":threads=2");
  ASSERT_EQ(plug.exit_code, 0) << plug.err;
  const json a = json::parse(read_file(file("inspect_cpu.json"))), b = json::parse(read_file(file("inspect_plugin.json")));
  EXPECT_EQ(b.at("steps"), a.at("steps"));
  EXPECT_EQ(plug.out, cpu.out);
}

TEST_F(Plugin, PartialPluginFallsBackToCpuWithTheSameBits) {
  const auto [cpu, cpu_dump] = dumped(text_run(), "partial_cpu");
  const auto [part, part_dump] =
      dumped(text_run() + " --backend plugin:" + kPartialPlugin + ":threads=2 --fallback cpu", "partial_plugin");
  EXPECT_EQ(part.out, cpu.out);
  EXPECT_TRUE(part_dump == cpu_dump) << "the logits dumps differ: "
                                     << dump_difference(file("partial_cpu.safetensors"), file("partial_plugin.safetensors"));
  EXPECT_NE(part.err.find("backend: plugin:libstaticlm_partial_plugin.so ran token_embedding, lm_head ("), std::string::npos)
      << part.err;
  EXPECT_NE(part.err.find("cpu fallback ran ple_embedding, ple_projection, decoder_layer_prefill_{0-5}, "
                          "decoder_layer_decode_{0-5} ("),
            std::string::npos)
      << part.err;

  const auto [img, img_dump] = dumped(image_run() + " --backend plugin:" + kPartialPlugin + " --fallback cpu", "partial_img");
  const auto [img_cpu, img_cpu_dump] = dumped(image_run(), "partial_img_cpu");
  EXPECT_EQ(img.out, img_cpu.out);
  EXPECT_TRUE(img_dump == img_cpu_dump);
  EXPECT_NE(img.err.find("cpu fallback ran vision_prefill, multimodal_fusion_prefill"), std::string::npos) << img.err;
}

TEST_F(Plugin, PartialPluginWithoutFallbackIsRefusedNamingTheMissingGraphs) {
  const auto r = test::run_staticlm(text_run() + " --backend plugin:" + kPartialPlugin);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(last_line(r.err),
            "error: plugin:libstaticlm_partial_plugin.so does not provide ple_embedding, ple_projection, "
            "decoder_layer_prefill_{0-5}, decoder_layer_decode_{0-5}; give --fallback cpu to run them on the CPU back end");
  EXPECT_EQ(r.out, "");
}

TEST_F(Plugin, LoaderRefusesBrokenPluginsWithTheirMessage) {
  struct Case {
    std::string backend, expect;
  };
  const Case cases[] = {
      {"plugin:" + test_plugin("wrong_version"), "ABI version 99, this staticlm loads version 1"},
      {"plugin:" + test_plugin("wrong_size"), "struct_size 8, expected at least"},
      {"plugin:" + test_plugin("no_entry"), "no entry point staticlm_backend_plugin_v1"},
      {"plugin:" + test_plugin("faulty") + ":misreport=lm_head",
       "subgraph lm_head: output logits: F32 [1, 1, 262145], expected F32 [1, 1, 262144]"},
      {"plugin:" + test_plugin("faulty") + ":fail=decoder_layer_decode_1",
       "plugin:libtest_plugin_faulty.so: decoder_layer_decode_1: simulated device fault"},
      {"plugin:" + kCpuPlugin + ":bogus=1", "create failed: unknown option 'bogus'"},
      {"plugin:" + kCpuPlugin + ":threads=zero", "option threads=zero: expected a whole number"},
      {"plugin:" + model() + "/config.json", "cannot load"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.backend);
    const auto r = test::run_staticlm(text_run() + " --backend " + c.backend);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const std::string line = last_line(r.err);
    EXPECT_EQ(line.rfind("error: ", 0), 0u) << line;
    EXPECT_NE(line.find(c.expect), std::string::npos) << line;
  }
}

TEST_F(Plugin, OtherCommandsTakeTheBackend) {
  const auto bench = test::run_staticlm("bench -m " + model() + " -p 8 -n 2 --max-seq 32 --threads 2 --json --backend plugin:" +
                                        kPartialPlugin + " --fallback cpu");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const json j = json::parse(bench.out);
  EXPECT_EQ(j.at("backend"), "plugin:" + kPartialPlugin);
  EXPECT_NE(j.at("backend_placement").get<std::string>().find("cpu fallback ran"), std::string::npos);
  for (const char* cmd : {"chat", "serve"}) {
    SCOPED_TRACE(cmd);
    const auto r = test::run_staticlm(std::string(cmd) + " -m " + model() + " --backend plugin:" + kPartialPlugin);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(last_line(r.err).find("does not provide"), std::string::npos) << r.err;
  }
}

TEST_F(Plugin, BackendCheckPassesTheCpuPlugin) {
  const auto r = test::run_staticlm("backend-check --backend plugin:" + kCpuPlugin + ":threads=2 -m " + model() +
                                    " -p 'The quick brown fox' --max-seq 32 --threads 2 --report " + file("check.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = json::parse(read_file(file("check.json")));
  EXPECT_TRUE(j.at("pass").get<bool>());
  EXPECT_EQ(j.at("graphs").size(), 16u);  // every graph of the text contract
  for (const json& g : j.at("graphs")) {
    for (const json& o : g.at("outputs")) EXPECT_TRUE(o.at("bit_exact").get<bool>()) << g.at("graph");
  }
}

TEST_F(Plugin, BackendCheckRunsARecordingWithTheVisionGraphs) {
  const std::string rec = file("rec");
  const auto made = test::run_staticlm(image_run() + " --record " + rec);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto r = test::run_staticlm("backend-check --backend plugin:" + kPartialPlugin + " -m " + model() + " --record " +
                                    rec + " --threads 2 --report " + file("rec.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = json::parse(read_file(file("rec.json")));
  ASSERT_EQ(j.at("graphs").size(), 2u);
  EXPECT_EQ(j.at("graphs")[0].at("graph"), "token_embedding");
  EXPECT_EQ(j.at("graphs")[1].at("graph"), "lm_head");
  EXPECT_NE(j.at("not_provided").dump().find("vision_prefill"), std::string::npos);

  const auto full = test::run_staticlm("backend-check --backend plugin:" + kCpuPlugin + " -m " + model() + " --record " + rec +
                                       " --threads 2");
  ASSERT_EQ(full.exit_code, 0) << full.out << full.err;
  EXPECT_NE(full.out.find("vision_prefill"), std::string::npos);
  EXPECT_NE(full.out.find("multimodal_fusion_prefill"), std::string::npos);
}

TEST_F(Plugin, BackendCheckFailsNamingTheGraphAPluginGetsWrong) {
  struct Case {
    std::string fault, expect;
  };
  const Case cases[] = {
      {"perturb=decoder_layer_prefill_3", "FAIL decoder_layer_prefill_3: output hidden_states: rel_l2"},
      {"perturb=lm_head", "FAIL lm_head: output logits: peir"},
      {"skip=lm_head", "FAIL lm_head: output logits: 262144 of 262144 elements not written"},
      {"scribble=token_embedding", "FAIL token_embedding: input input_ids was modified"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fault);
    const auto r = test::run_staticlm("backend-check --backend plugin:" + test_plugin("faulty") + ":" + c.fault + " -m " +
                                      model() + " --prompt-ids 2,105,2364 --max-seq 32 --threads 2 --report " +
                                      file("bad.json"));
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 failed"), std::string::npos) << r.out;
    EXPECT_FALSE(json::parse(read_file(file("bad.json"))).at("pass").get<bool>());
  }
}

}  // namespace
}  // namespace staticlm
