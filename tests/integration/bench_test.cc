// staticlm bench: decode speed next to the measured memory bandwidth, prefill and image encode
// next to the measured compute peaks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/gemm_amx.h"
#include "model/config.h"
#include "model/flops.h"
#include "model/layer_table.h"
#include "model/weights.h"
#include "test_util.h"

namespace staticlm {
namespace {

// One tiny model for the suite; bench_json runs `bench --json` on it with small sizes.
class Bench : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    made_ = test::run_staticlm("make-model --preset tiny --seed 5 --out " + dir_->path());
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!dir_) GTEST_FAIL() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
    ASSERT_EQ(made_.exit_code, 0) << made_.err;
  }
  static nlohmann::json bench_json(const std::string& extra) {
    const auto r = test::run_staticlm("bench -m " + dir_->path() + " -p 8 -n 4 --max-seq 64 --threads 1 --json" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  }
  static test::TempDir* dir_;
  static test::CommandResult made_;
};
test::TempDir* Bench::dir_ = nullptr;
test::CommandResult Bench::made_;

TEST_F(Bench, ReportsSpeedAgainstBandwidth) {
  const test::TempDir& dir = *dir_;
  const auto j = bench_json("");
  ASSERT_TRUE(j.contains("decode_tok_s"));
  EXPECT_GT(j["read_bandwidth_gb_s"].get<double>(), 0.1);
  EXPECT_GT(j["decode_tok_s"].get<double>(), 0.0);
  EXPECT_EQ(j["prompt_tokens"], 8);
  EXPECT_EQ(j["decode_tokens"], 4);
  // Bytes one decode step reads, from the config's tensor list (bf16): every text weight, the
  // tied LM head included, but one row of the per-layer embedding table.
  const ModelConfig c = load_model_config(dir.path());
  std::int64_t bytes = 0;
  for (const WeightSpec& w : expected_weights(c)) {
    if (w.name.rfind("model.language_model.", 0) != 0) continue;
    bytes += 2 * (w.name.find("embed_tokens_per_layer") != std::string::npos ? w.shape[1] : w.shape.numel());
  }
  EXPECT_EQ(j["decode_weight_bytes_per_token"].get<std::int64_t>(), bytes);
  // Rank-2 weights of whole cache lines (bf16: 2 bytes each), all on lines in a file make-model
  // wrote.
  int matrices = 0;
  for (const WeightSpec& w : expected_weights(c))
    matrices += w.shape.rank() == 2 && w.shape.numel() > 0 && 2 * w.shape.numel() % 64 == 0;
  EXPECT_EQ(j["weight_matrices"], matrices);
  EXPECT_EQ(j["weight_matrices_on_cache_lines"], matrices);
  const double fraction = j["decode_fraction_of_bandwidth"];
  EXPECT_NEAR(fraction, j["decode_tok_s"].get<double>() * bytes / 1e9 / j["read_bandwidth_gb_s"].get<double>(), 1e-9);
  // Per decode step: one time per token, within the decode total; the median between the
  // fastest and slowest step, and its rate computed from it.
  const auto steps = j["decode_step_seconds"].get<std::vector<double>>();
  ASSERT_EQ(steps.size(), 4u);
  double sum = 0;
  for (double t : steps) {
    EXPECT_GT(t, 0.0);
    sum += t;
  }
  EXPECT_LE(sum, j["decode_seconds"].get<double>());
  const double lo = j["decode_step_min_s"], hi = j["decode_step_max_s"], mid = j["decode_step_median_s"];
  EXPECT_EQ(lo, *std::min_element(steps.begin(), steps.end()));
  EXPECT_EQ(hi, *std::max_element(steps.begin(), steps.end()));
  auto sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_DOUBLE_EQ(mid, (sorted[1] + sorted[2]) / 2);
  EXPECT_NEAR(j["decode_median_step_gb_s"].get<double>(), bytes / mid / 1e9, 1e-9 * bytes / mid / 1e9);
  EXPECT_NEAR(j["decode_median_step_fraction_of_bandwidth"].get<double>(),
              j["decode_median_step_gb_s"].get<double>() / j["read_bandwidth_gb_s"].get<double>(), 1e-9);

  // The compute side: peaks, prefill flops from the config, ratios to the peaks.
  EXPECT_FALSE(j["dispatch_target"].get<std::string>().empty());
  const double fma_peak = j["fma_peak_gflop_s"];
  const double bf16_peak = j["bf16_dot_peak_gflop_s"];
  EXPECT_GT(fma_peak, 1.0);
  EXPECT_GE(bf16_peak, 0.0);
  EXPECT_EQ(j["prefill_flops"].get<std::int64_t>(), prefill_flops(c, build_layer_table(c.text), 8));
  const double prefill_gflop_s = j["prefill_gflop_s"];
  EXPECT_NEAR(prefill_gflop_s, j["prefill_flops"].get<double>() / j["prefill_seconds"].get<double>() / 1e9,
              1e-6 * prefill_gflop_s);
  const double of_peak = j["prefill_fraction_of_peak"];
  EXPECT_GT(of_peak, 0.0);
  EXPECT_LT(of_peak, 10.0);
  EXPECT_NEAR(of_peak, prefill_gflop_s / fma_peak, 1e-9);
  // The bf16 peak is measured wherever the CPU has vdpbf16ps; prefill is held to it only where
  // the kernels ran it, and the default uses it only where it outpaces f32 FMA.
  EXPECT_EQ(bf16_peak > 0, j["bf16_dot_speed_over_fma"].get<double>() > 0);
  const bool bf16_kernels = j["bf16_dot_kernels"];
  if (bf16_kernels) {
    EXPECT_GT(bf16_peak, 0.0);
  }
  const bool amx_kernels = j["amx_kernels"];
  if (bf16_peak > 0 && j["dispatch_target"] == cpu::default_kernel_target() && !amx_kernels) {
    EXPECT_EQ(bf16_kernels, j["bf16_dot_speed_over_fma"].get<double>() >= cpu::kBf16DotMinSpeed);
  }
  // The AMX peak is measured wherever the CPU and the OS offer AMX; the GEMMs ran on it with the
  // "+AMX" target (the default there), and prefill is then held to it.
  const double amx_peak = j["amx_peak_gflop_s"];
  EXPECT_EQ(amx_peak > 0, cpu::cpu_has_amx());
  EXPECT_EQ(amx_kernels, j["dispatch_target"].get<std::string>().ends_with("+AMX"));
  if (amx_kernels) {
    EXPECT_GT(amx_peak, fma_peak);
    EXPECT_NEAR(j["prefill_fraction_of_amx_peak"].get<double>(), prefill_gflop_s / amx_peak, 1e-9);
  } else {
    EXPECT_TRUE(j["prefill_fraction_of_amx_peak"].is_null());
  }
  if (bf16_kernels) {
    const double of_bf16 = j["prefill_fraction_of_bf16_peak"];
    EXPECT_GT(of_bf16, 0.0);
    EXPECT_LT(of_bf16, 10.0);
  } else {
    EXPECT_TRUE(j["prefill_fraction_of_bf16_peak"].is_null());
  }
  EXPECT_GE(j["time_to_first_token_s"].get<double>(), j["prefill_seconds"].get<double>());
  // Resident set during decode: at least the weights it reads once they are paged in.
  EXPECT_GT(j["peak_rss_bytes"].get<std::int64_t>(), 0);
  EXPECT_GT(j["kv_cache_bytes"].get<std::int64_t>(), 0);
  EXPECT_NEAR(j["peak_rss_fraction_of_decode_bytes"].get<double>(),
              j["peak_rss_bytes"].get<double>() / (bytes + j["kv_cache_bytes"].get<double>()), 1e-9);
  EXPECT_GE(j["process_peak_rss_bytes"].get<std::int64_t>(), j["peak_rss_bytes"].get<std::int64_t>());
  EXPECT_FALSE(j.contains("image_encode_seconds"));  // only with --image-encode

  auto bad = test::run_staticlm("bench -m " + dir.path() + " -p 60 -n 4 --max-seq 64");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("do not fit max_seq 64"), std::string::npos) << bad.err;
}

// llama-bench's habits: -r N runs prefill and decode N times (each run's seconds, their mean,
// tok/s as mean and sample deviation of the runs' rates, computed here from the seconds), -o
// jsonl is the same object on one line, -o md its table, and its tuning flags (-ngl, -fa) are
// noted.
// With f32 activations the GEMMs stay off AMX whatever the target: prefill is then held to the
// f32 FMA peak, and the AMX figures say AMX did not run.
TEST_F(Bench, AmxCeilingOnlyWhereTheGemmsRanOnAmx) {
  const auto j = bench_json(" --f32-activations");
  ASSERT_TRUE(j.contains("amx_kernels"));
  EXPECT_FALSE(j["amx_kernels"].get<bool>());
  EXPECT_TRUE(j["prefill_fraction_of_amx_peak"].is_null());
  EXPECT_EQ(j["amx_peak_gflop_s"].get<double>() > 0, cpu::cpu_has_amx());
  const auto md = test::run_staticlm("bench -m " + dir_->path() + " -p 8 -n 4 --max-seq 64 --threads 1 --f32-activations -o md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("% FMA |"), std::string::npos) << md.out;
  EXPECT_EQ(md.out.find("% AMX |"), std::string::npos) << md.out;
}

TEST_F(Bench, RepetitionsAndLlamaBenchOutput) {
  // llama-bench's switches with their 0|1 values: -mmp 0 is --no-mmap.
  const auto r = test::run_staticlm("bench -m " + dir_->path() +
                                    " -p 8 -n 4 --max-seq 64 --threads 1 -r 3 -o jsonl -ngl 99 -fa 1 -mmp 0 -nkvo 1 -nopo 0 -dio 1 --progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.err.find("note: --n-gpu-layers 99 has no effect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: --flash-attn 1 has no effect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: --no-kv-offload has no effect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: --direct-io has no effect"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--no-op-offload"), std::string::npos) << r.err;  // 0: nothing to note
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["weights_in_huge_pages"], true);
  EXPECT_EQ(j["repetitions"], 3);
  const std::vector<double> prefill = j["prefill_seconds_each"], decode = j["decode_seconds_each"];
  ASSERT_EQ(prefill.size(), 3u);
  ASSERT_EQ(decode.size(), 3u);
  EXPECT_EQ(j["decode_step_seconds"].size(), 12u);  // 4 steps a run
  const auto check = [&](const std::vector<double>& seconds, double tokens, const char* mean_key, const char* sd_key, const char* s_key) {
    double s = 0, m = 0, v = 0;
    for (const double x : seconds) {
      s += x / 3;
      m += tokens / x / 3;
    }
    for (const double x : seconds) v += (tokens / x - m) * (tokens / x - m) / 2;
    EXPECT_NEAR(j[s_key].get<double>(), s, 1e-12);
    EXPECT_NEAR(j[mean_key].get<double>(), m, 1e-9 * m);
    EXPECT_NEAR(j[sd_key].get<double>(), std::sqrt(v), 1e-9 * m);
  };
  check(prefill, 8, "prefill_tok_s_mean", "prefill_tok_s_stdev", "prefill_seconds");
  check(decode, 4, "decode_tok_s_mean", "decode_tok_s_stdev", "decode_seconds");

  const auto md = test::run_staticlm("bench -m " + dir_->path() + " -p 8 -n 4 --max-seq 64 --threads 1 -r 2 -o md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  std::vector<std::string> rows;
  std::istringstream lines(md.out);
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 4u) << md.out;
  EXPECT_EQ(rows[0], "| model | size | params | backend | threads | test | t/s | of the ceiling |");
  for (const auto& [row, test] : {std::pair{2, "| pp8 | "}, std::pair{3, "| tg4 | "}}) {
    EXPECT_NE(rows[static_cast<std::size_t>(row)].find(std::string("| 1 ") + test), std::string::npos) << rows[static_cast<std::size_t>(row)];
    EXPECT_NE(rows[static_cast<std::size_t>(row)].find(" ± "), std::string::npos) << rows[static_cast<std::size_t>(row)];
  }
  for (const char* bad : {"-r 0", "-o xml"}) {
    const auto e = test::run_staticlm("bench -m " + dir_->path() + " -p 8 -n 4 --max-seq 64 " + bad);
    EXPECT_EQ(e.exit_code, 2) << bad;
  }
}

// llama-bench's lists: comma lists, ranges and repeated flags make a test per value (pp for -p,
// tg for -n, pp+tg for -pg), each -r times after a warm-up run, on each -t thread count; -o
// json is an array of tests with llama-bench's fields (samples_ns, samples_ts, avg_ts,
// stddev_ts, n_prompt, n_gen), checked here against each other and the flop count.
TEST_F(Bench, ListsRunATestPerValue) {
  const std::string m = "bench -m " + dir_->path() + " --max-seq 64 ";
  const auto r = test::run_staticlm(m + "-p 8,16 -n 4 -pg 8,4 -t 1 -r 2 -o json --mmap 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tests = nlohmann::json::parse(r.out);
  ASSERT_TRUE(tests.is_array());
  ASSERT_EQ(tests.size(), 4u) << r.out;
  const ModelConfig c = load_model_config(dir_->path());
  const std::vector<std::pair<const char*, std::pair<int, int>>> expected = {
      {"pp8", {8, 0}}, {"pp16", {16, 0}}, {"tg4", {0, 4}}, {"pp8+tg4", {8, 4}}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& t = tests[i];
    SCOPED_TRACE(expected[i].first);
    EXPECT_EQ(t["test"], expected[i].first);
    const int p = expected[i].second.first, n = expected[i].second.second;
    EXPECT_EQ(t["n_prompt"], p);
    EXPECT_EQ(t["n_gen"], n);
    EXPECT_EQ(t["threads"], 1);
    EXPECT_EQ(t["warmup"], true);
    EXPECT_EQ(t["use_mmap"], true);
    // llama-bench's names: the model's file(s), its bytes and parameters, the threads, the time.
    EXPECT_EQ(t["n_threads"], 1);
    EXPECT_EQ(t["model_filename"], dir_->path());
    EXPECT_EQ(t["model_size"].get<std::uint64_t>(), std::filesystem::file_size(dir_->path() + "/model.safetensors"));
    EXPECT_EQ(t["model_n_params"], t["parameters"]);
    EXPECT_EQ(t["backends"], "CPU");
    EXPECT_TRUE(std::regex_match(t["test_time"].get<std::string>(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
        << t["test_time"];
    const std::vector<std::int64_t> ns = t["samples_ns"];
    const std::vector<double> ts = t["samples_ts"];
    ASSERT_EQ(ns.size(), 2u);
    ASSERT_EQ(ts.size(), 2u);
    double mean = 0, mean_ns = 0;
    for (std::size_t k = 0; k < 2; ++k) {
      EXPECT_NEAR(ts[k], (p + n) / (static_cast<double>(ns[k]) * 1e-9), 1e-6 * ts[k]);
      mean += ts[k] / 2;
      mean_ns += static_cast<double>(ns[k]) / 2;
    }
    EXPECT_NEAR(t["avg_ts"].get<double>(), mean, 1e-9 * mean);
    EXPECT_NEAR(t["stddev_ts"].get<double>(), std::abs(ts[0] - ts[1]) / std::sqrt(2.0), 1e-9 * mean);
    EXPECT_NEAR(t["avg_ns"].get<double>(), mean_ns, 1.0);
    if (n == 0) {  // pp: its flops over the mean seconds against the FMA peak
      EXPECT_EQ(t["prefill_flops"].get<std::int64_t>(), prefill_flops(c, build_layer_table(c.text), p));
      const double gflop_s = t["prefill_flops"].get<double>() / (mean_ns * 1e-9) / 1e9;
      EXPECT_NEAR(t["gflop_s"].get<double>(), gflop_s, 1e-6 * gflop_s);
      EXPECT_NEAR(t["fraction_of_fma_peak"].get<double>(), gflop_s / t["fma_peak_gflop_s"].get<double>(), 1e-6);
      if (t["dispatch_target"].get<std::string>().ends_with("+AMX")) {
        EXPECT_NEAR(t["fraction_of_amx_peak"].get<double>(), gflop_s / t["amx_peak_gflop_s"].get<double>(), 1e-6);
      } else {
        EXPECT_TRUE(t["fraction_of_amx_peak"].is_null());
      }
    } else {
      EXPECT_FALSE(t.contains("prefill_flops"));
    }
    if (p == 0) {  // tg: every run's steps, within the run's seconds; the median step against the bandwidth
      const std::vector<double> steps = t["decode_step_seconds"];
      ASSERT_EQ(steps.size(), 8u);
      for (std::size_t k = 0; k < 2; ++k) {
        double sum = 0;
        for (std::size_t s = 0; s < 4; ++s) sum += steps[4 * k + s];
        EXPECT_LE(sum, static_cast<double>(ns[k]) * 1e-9 + 1e-6);
      }
      std::vector<double> sorted = steps;
      std::sort(sorted.begin(), sorted.end());
      const double mid = (sorted[3] + sorted[4]) / 2;
      EXPECT_DOUBLE_EQ(t["decode_median_step_s"].get<double>(), mid);
      const double bytes = t["decode_weight_bytes_per_token"].get<double>();
      EXPECT_NEAR(t["decode_median_step_fraction_of_bandwidth"].get<double>(), bytes / mid / 1e9 / t["read_bandwidth_gb_s"].get<double>(),
                  1e-9);
    } else {
      EXPECT_FALSE(t.contains("decode_step_seconds"));
    }
  }

  // Ranges and repeated flags (-p 0 leaves out its pp test) as llama-bench's csv: a header and a
  // row per test and thread count.
  const auto csv = test::run_staticlm(m + "-p 4-16*2 -p 0 -n 2-6+2 -n 3 -pg 4,2 -pg 6,1 -t 1,2 -o csv --no-warmup");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> rows;
  std::istringstream lines(csv.out);
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 19u) << csv.out;
  EXPECT_EQ(rows[0], "model,size_bytes,params,backend,threads,test,n_prompt,n_gen,n_depth,repetitions,avg_ts,stddev_ts,fraction_of_ceiling,ceiling");
  const std::vector<std::string> order = {"pp4,4,0", "pp8,8,0", "pp16,16,0", "tg2,0,2", "tg4,0,4", "tg6,0,6", "tg3,0,3",
                                          "pp4+tg2,4,2", "pp6+tg1,6,1"};
  for (std::size_t i = 0; i < 18; ++i) {
    const std::string& row = rows[i + 1];
    const std::string cells = "," + std::to_string(1 + i / 9) + "," + order[i % 9] + ",0,1,";
    EXPECT_NE(row.find(cells), std::string::npos) << row;
    const bool pg = order[i % 9].find('+') != std::string::npos, pp = order[i % 9][0] == 'p' && !pg;
    // (staticlm runs on this process's kernel target: the default, or STATICLM_KERNEL_TARGET's)
    const std::string compute = cpu::kernel_target().ends_with("+AMX") ? ",AMX" : ",FMA";
    const std::string end = pg ? ",," : pp ? compute : ",bandwidth";
    EXPECT_EQ(row.substr(row.size() - end.size()), end) << row;
  }

}

// llama-bench's -d: each test after that many tokens in the cache ("pp8 @ d16"); a pp test's
// flops are its rows' against the cache, counted here by summing the (query, key) pairs.
TEST_F(Bench, DepthRunsEachTestAfterACachedPrompt) {
  const auto r = test::run_staticlm("bench -m " + dir_->path() + " --max-seq 64 -p 8 -n 3 -pg 4,2 -d 0,16 -t 1 -r 2 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tests = nlohmann::json::parse(r.out);
  ASSERT_EQ(tests.size(), 6u) << r.out;
  const std::vector<std::string> names = {"pp8", "tg3", "pp4+tg2", "pp8 @ d16", "tg3 @ d16", "pp4+tg2 @ d16"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(tests[i]["test"], names[i]);
    EXPECT_EQ(tests[i]["n_depth"], i < 3 ? 0 : 16);
    EXPECT_EQ(tests[i]["samples_ns"].size(), 2u);  // the second run rewinds to the depth
    EXPECT_GT(tests[i]["avg_ts"].get<double>(), 0.0);
  }
  EXPECT_EQ(tests[4]["decode_step_seconds"].size(), 6u);
  // pp8 at depth 16 against pp8 at 0: the same linears, and each row q = 16..23 attends to
  // min(q + 1, window) keys where row q - 16 attended to min(q - 15, window).
  const ModelConfig c = load_model_config(dir_->path());
  std::int64_t extra = 0;
  for (const LayerInfo& l : build_layer_table(c.text)) {
    const std::int64_t w = l.sliding ? c.text.sliding_window : 1 << 30;
    for (std::int64_t q = 16; q < 24; ++q) extra += 4 * l.num_heads * l.head_dim * (std::min(q + 1, w) - std::min(q - 15, w));
  }
  ASSERT_GT(extra, 0);
  EXPECT_EQ(tests[3]["prefill_flops"].get<std::int64_t>() - tests[0]["prefill_flops"].get<std::int64_t>(), extra);

  // The depth counts toward max_seq.
  const auto e = test::run_staticlm("bench -m " + dir_->path() + " --max-seq 64 -p 8 -n 0 -d 60");
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("bench: test pp8 @ d60 needs 68 positions"), std::string::npos) << e.err;
}

// llama-bench's -m list: each model's tests in turn, a row each naming its model; a bad
// directory anywhere in the list is refused before anything is measured.
TEST_F(Bench, SeveralModelsRunInTurn) {
  const test::TempDir other;  // the same model under a second name
  std::filesystem::create_directory_symlink(dir_->path(), other.file("second"));
  const auto csv = test::run_staticlm("bench -m " + dir_->path() + " -m " + other.file("second") +
                                      " -p 4 -n 2 --max-seq 32 -t 1 -o csv --no-warmup");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::vector<std::string> rows;
  std::istringstream lines(csv.out);
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 5u) << csv.out;
  const std::string first = std::filesystem::path(dir_->path()).filename().string() + " ";
  for (std::size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(rows[i].rfind(i < 3 ? first : "second ", 0), 0u) << rows[i];
    EXPECT_NE(rows[i].find(i % 2 == 1 ? ",pp4," : ",tg2,"), std::string::npos) << rows[i];
  }
  const auto bad = test::run_staticlm("bench -m " + dir_->path() + " -m " + other.file("nowhere") + " -p 4 -n 2 --max-seq 32");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find(other.file("nowhere") + "/config.json"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;
  EXPECT_EQ(bad.err.find("bench: measuring"), std::string::npos) << bad.err;
}

// A bad list item, range or test is refused naming the flag and the item, before anything is
// measured or printed.
TEST_F(Bench, BadListsAreRefusedByName) {
  const std::string m = "bench -m " + dir_->path() + " --max-seq 64 ";
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"-p 8,,16", "-p : expected counts"},
           {"-p 16-8", "-p 16-8: the range's last value is below its first"},
           {"-n 1-5000", "-n: more than 1000 values"},
           {"-n 2-8*1", "-n 2-8*1: a range's factor must be at least 2"},
           {"-p 4x", "-p 4x: expected counts"},
           {"-t 1,999", "--threads 999: expected counts 0 to 256"},
           {"-pg 8", "-pg 8: expected PROMPT,GEN"},
           {"-pg 8,0", "-pg 8,0: expected PROMPT,GEN"},
           {"-pg 4-5,2", "-pg 4-5,2: expected PROMPT,GEN"},
           {"-pg 4,2,1", "-pg 4,2,1: expected PROMPT,GEN"},
           {"-p 0 -n 0", "bench: no test to run"},
           {"-p 8,70 -n 4", "bench: test pp70 needs 70 positions; max_seq 64 holds 63"},
           {"-p 0 -n 4,63", "bench: test tg63 needs 64 positions"},
           {"-mmp 2", "--mmap 2: expected 0 or 1"},
           {"-nkvo 0,1", "--no-kv-offload 0,1: expected 0 or 1"},
           {"--mmap 1 --no-mmap", "--no-mmap excludes --mmap"}}) {
    const auto e = test::run_staticlm(m + flags);
    EXPECT_EQ(e.exit_code, 2) << flags;
    EXPECT_NE(e.err.find(message), std::string::npos) << flags << "\n" << e.err;
    EXPECT_TRUE(e.out.empty()) << flags << "\n" << e.out;
  }
}

TEST_F(Bench, ImageEncodeAgainstThePeak) {
  const auto j = bench_json(" --image-encode");
  ASSERT_TRUE(j.contains("image_encode_flops"));
  // The tiny tower on the full 2520-patch grid (280 tokens of 9 patches), every row valid.
  const ModelConfig c = load_model_config(dir_->path());
  EXPECT_EQ(j["image_encode_flops"].get<std::int64_t>(), vision_encode_flops(*c.vision, c.text.hidden_size, 2520, 280));
  EXPECT_GT(j["image_encode_seconds"].get<double>(), 0.0);
  const double gflop_s = j["image_encode_gflop_s"];
  EXPECT_NEAR(gflop_s, j["image_encode_flops"].get<double>() / j["image_encode_seconds"].get<double>() / 1e9,
              1e-6 * gflop_s);
  const double of_peak = j["image_encode_fraction_of_peak"];
  EXPECT_GT(of_peak, 0.0);
  EXPECT_LT(of_peak, 10.0);
  EXPECT_TRUE(j.contains("prefill_flops"));
  // llama-bench's table gains a row: the image tokens per second and the share of the compute
  // ceiling (the AMX peak where the GEMMs run on AMX).
  const auto md = test::run_staticlm("bench -m " + dir_->path() + " -p 8 -n 4 --max-seq 64 --threads 1 --image-encode -o md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const std::size_t img = md.out.find("| img280 | ");
  ASSERT_NE(img, std::string::npos) << md.out;
  const std::string cells = md.out.substr(img + 11, md.out.find('\n', img) - img - 11);  // "T/S | P% FMA |"
  const double tok_s = std::stod(cells);
  EXPECT_GT(tok_s, 0.0);
  EXPECT_NE(cells.find(cpu::kernel_target().ends_with("+AMX") ? "% AMX |" : "% FMA |"), std::string::npos) << cells;

  test::TempDir text_only;
  const auto made = test::run_staticlm("make-model --preset tiny --seed 5 --text-only --out " + text_only.path());
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto bad = test::run_staticlm("bench -m " + text_only.path() + " -p 8 -n 4 --max-seq 64 --threads 1 --image-encode");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--image-encode needs a model with a vision tower"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace staticlm
