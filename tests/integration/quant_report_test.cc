// `staticlm info` on quantized checkpoints (scheme, dtypes, bytes per decoded token against a
// count from the tensor shapes) and `staticlm quant-report` (quant/accuracy.h): weight SQNR equal
// to a direct computation with the format's own quantizer and close to the uniform-noise model,
// a checkpoint against its own copy exact, and bad input refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "base/half.h"
#include "model/checkpoint.h"
#include "model/weights.h"
#include "quant/accuracy.h"
#include "quant/formats.h"
#include "quant/quantize_checkpoint.h"
#include "test_util.h"
#include "unit/tensor/safetensors_test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;

// The tiny model (bf16) and its q8 and q4 copies, shared by the suites below.
class QuantReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    test::make_tiny_model(dir_->file("bf16"), 1);
    for (const char* s : {"q8", "q4"}) quant::quantize_checkpoint({dir_->file("bf16"), dir_->file(s), s, nullptr});
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!dir_) GTEST_FAIL() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
  }
  static std::string dir(const std::string& name) { return dir_->file(name); }
  static quant::AccuracyReport report(const std::string& quant_dir, std::vector<std::string> prompts) {
    quant::AccuracyOptions o;
    o.base_dir = dir("bf16");
    o.quant_dir = quant_dir;
    o.prompts = std::move(prompts);
    o.threads = 2;
    return quant::accuracy_report(o);
  }
  static test::TempDir* dir_;
};
test::TempDir* QuantReport::dir_ = nullptr;

using QuantInfo = QuantReport;

// Bytes one decode step reads, from the config's tensor list alone: a quantized matrix's values
// plus its scales; of the per-layer embedding table one row; everything else whole in bf16.
std::int64_t expected_decode_bytes(const std::string& model_dir, const std::string& scheme) {
  const ModelConfig c = load_model_config(model_dir);
  std::int64_t bytes = 0;
  for (const WeightSpec& w : expected_weights(c)) {
    if (w.name.rfind("model.language_model.", 0) != 0) continue;
    const bool matrix = w.shape.rank() == 2 && w.name.ends_with(".weight");
    if (!matrix) {
      bytes += 2 * w.shape.numel();
      continue;
    }
    const std::int64_t rows = w.name.find("embed_tokens_per_layer") != std::string::npos ? 1 : w.shape[0];
    const std::int64_t cols = w.shape[1];
    if (scheme == "q8") {
      bytes += rows * cols + 4 * rows;
    } else if (scheme == "q4" && cols % 32 == 0) {
      bytes += rows * cols / 2 + 2 * rows * (cols / 32);
    } else {
      bytes += 2 * rows * cols;
    }
  }
  return bytes;
}

nlohmann::json info_json(const std::string& model_dir) {
  const auto r = test::run_staticlm("info -m " + model_dir + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

TEST_F(QuantInfo, ReportsSchemeDtypesAndBytesPerToken) {
  const auto bf16 = info_json(dir("bf16")), q8 = info_json(dir("q8")), q4 = info_json(dir("q4"));
  EXPECT_EQ(bf16["quantization_scheme"], "none");
  EXPECT_EQ(q8["quantization_scheme"], "q8");
  EXPECT_EQ(q4["quantization_scheme"], "q4");
  // The keys other checks read are still there.
  EXPECT_EQ(q8["layers"].size(), 6u);
  EXPECT_EQ(q8["num_parameters"], bf16["num_parameters"]);

  const std::int64_t b16 = bf16["decode_weight_bytes_per_token"], b8 = q8["decode_weight_bytes_per_token"],
                     b4 = q4["decode_weight_bytes_per_token"];
  EXPECT_EQ(b16, expected_decode_bytes(dir("bf16"), "bf16"));
  EXPECT_EQ(b8, expected_decode_bytes(dir("bf16"), "q8"));
  EXPECT_EQ(b4, expected_decode_bytes(dir("bf16"), "q4"));
  // int8 halves bf16 (plus 4 bytes of scale per row); int4 with an f16 scale per 32 is 4.5 bits.
  EXPECT_LT(b8, b16 * 0.56);
  EXPECT_GT(b8, b16 * 0.5);
  EXPECT_LT(b4, b8);

  // Per dtype: the float checkpoint is all bf16; q8 adds one F32 scale tensor per I8 matrix.
  EXPECT_EQ(bf16["weight_dtypes"].size(), 1u);
  EXPECT_GT(bf16["weight_dtypes"]["BF16"].get<int>(), 0);
  EXPECT_GT(q8["weight_dtypes"]["I8"].get<int>(), 0);
  EXPECT_EQ(q8["weight_dtypes"]["I8"], q8["weight_dtypes"]["F32"]);
  EXPECT_EQ(q4["weight_dtypes"]["I4"], q4["weight_dtypes"]["F16"]);

  const auto text = test::run_staticlm("info -m " + dir("q4"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("quant    q4\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("decode   " + std::to_string(b4) + " bytes of weights per token"), std::string::npos)
      << text.out;

  // Config only: the scheme from config.json, no weight figures.
  const std::string config_only = dir("q8_config_only");
  fs::create_directories(config_only);
  fs::copy_file(dir("q8") + "/config.json", config_only + "/config.json");
  const auto c = info_json(config_only);
  EXPECT_EQ(c["quantization_scheme"], "q8");
  EXPECT_TRUE(c["decode_weight_bytes_per_token"].is_null());
  EXPECT_TRUE(c["weight_dtypes"].is_null());
  EXPECT_TRUE(c["weight_matrices"].is_null());
  EXPECT_TRUE(c["weight_matrices_on_cache_lines"].is_null());

  // config.json and the weights' metadata naming different schemes: refused, naming both.
  const std::string mixed = dir("q8_says_q4");
  fs::copy(dir("q8"), mixed, fs::copy_options::recursive);
  auto config = nlohmann::ordered_json::parse(read_file(mixed + "/config.json"));
  config["quantization_config"]["scheme"] = "q4";
  write_text_atomic(mixed + "/config.json", config.dump(2));
  const auto bad = test::run_staticlm("info -m " + mixed);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("quantization_config.scheme \"q4\" but the weights' metadata staticlm_quantization says "
                         "\"q8\""),
            std::string::npos)
      << bad.err;
  // run opens the checkpoint the same way: refused before any output.
  const auto bad_run = test::run_staticlm("run -m " + mixed + " -p hi -n 1 --max-seq 64");
  EXPECT_EQ(bad_run.exit_code, 2);
  EXPECT_NE(bad_run.err.find("but the weights' metadata staticlm_quantization says \"q8\""), std::string::npos)
      << bad_run.err;

  // A scheme no build of staticlm writes, in config.json or in the weights' metadata.
  config["quantization_config"]["scheme"] = "q3";
  write_text_atomic(mixed + "/config.json", config.dump(2));
  const auto unknown = test::run_staticlm("run -m " + mixed + " -p hi -n 1 --max-seq 64");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find(mixed + "/config.json: quantization_config.scheme: unknown scheme \"q3\" (expected q8, "
                             "q4 or npu-w4)"),
            std::string::npos)
      << unknown.err;

  // Another tool's quantization: refused by its quant_method.
  config["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  write_text_atomic(mixed + "/config.json", config.dump(2));
  const auto other = test::run_staticlm("info -m " + mixed);
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("quantization_config.quant_method \"gptq\": staticlm reads only its own quantized "
                           "checkpoints"),
            std::string::npos)
      << other.err;
}

// Rank-2 tensors of whole cache lines (a nonzero multiple of 64 bytes) in a safetensors file, and
// how many start at a multiple of 64 bytes of the file, read from the header alone.
std::pair<int, int> matrices_on_lines(const std::string& path) {
  const std::string bytes = read_file(path);
  const std::uint64_t n = test::header_length(bytes);
  const auto h = nlohmann::json::parse(bytes.substr(8, n));
  int matrices = 0, on_lines = 0;
  for (const auto& [name, e] : h.items()) {
    if (name == "__metadata__" || e["shape"].size() != 2) continue;
    const std::uint64_t begin = e["data_offsets"][0], end = e["data_offsets"][1];
    if (end == begin || (end - begin) % 64 != 0) continue;
    ++matrices;
    on_lines += (8 + n + begin) % 64 == 0;
  }
  return {matrices, on_lines};
}

// The q4 copy with 8 more spaces of header: every tensor 8 bytes further, none on a line.
std::string moved_q4(const std::string& q4, const std::string& moved) {
  if (fs::exists(moved)) return moved;
  fs::copy(q4, moved, fs::copy_options::recursive);
  const std::string bytes = test::read_bytes(moved + "/model.safetensors");
  const std::uint64_t n = test::header_length(bytes);
  test::write_bytes(moved + "/model.safetensors", test::st_bytes(bytes.substr(8, n) + std::string(8, ' '), bytes.substr(8 + n)));
  return moved;
}

TEST_F(QuantInfo, CountsWeightMatricesOnCacheLines) {
  // As written: every matrix on a line.
  const auto [matrices, on_lines] = matrices_on_lines(dir("q4") + "/model.safetensors");
  ASSERT_GT(matrices, 10);
  EXPECT_EQ(on_lines, matrices);
  const auto q4 = info_json(dir("q4"));
  EXPECT_EQ(q4["weight_matrices"], matrices);
  EXPECT_EQ(q4["weight_matrices_on_cache_lines"], matrices);

  const std::string moved = moved_q4(dir("q4"), dir("q4_moved"));
  const auto [moved_matrices, moved_on_lines] = matrices_on_lines(moved + "/model.safetensors");
  EXPECT_EQ(moved_matrices, matrices);
  EXPECT_EQ(moved_on_lines, 0);
  const auto m = info_json(moved);
  EXPECT_EQ(m["weight_matrices"], matrices);
  EXPECT_EQ(m["weight_matrices_on_cache_lines"], 0);
  const auto text = test::run_staticlm("info -m " + moved);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("layout   0 of " + std::to_string(matrices) + " weight matrices start on a 64-byte cache line"),
            std::string::npos)
      << text.out;
}

TEST_F(QuantInfo, BenchNotesMatricesOffCacheLines) {
  const int matrices = matrices_on_lines(dir("q4") + "/model.safetensors").first;
  const std::string moved = moved_q4(dir("q4"), dir("q4_moved"));
  const auto bench = test::run_staticlm("bench -m " + moved + " -p 4 -n 2 --max-seq 64 --threads 1");
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("note     " + std::to_string(matrices) + " of " + std::to_string(matrices) +
                           " weight matrices start off a 64-byte cache line"),
            std::string::npos)
      << bench.out;
  const auto as_written = test::run_staticlm("bench -m " + dir("q4") + " -p 4 -n 2 --max-seq 64 --threads 1");
  ASSERT_EQ(as_written.exit_code, 0) << as_written.err;
  EXPECT_EQ(as_written.out.find("note "), std::string::npos) << as_written.out;
}

// SQNR of one matrix quantized here with the format's quantizer, and the uniform-noise model of
// the same quantization: each weight off by a uniform error of one step, variance step^2 / 12.
struct DirectSqnr {
  double measured_db = 0, model_db = 0;
};

DirectSqnr direct_sqnr(const TensorView& v, bool q8) {
  const std::int64_t rows = v.shape[0], cols = v.shape[1];
  std::vector<float> w(static_cast<std::size_t>(rows * cols)), back(static_cast<std::size_t>(cols));
  for (std::int64_t i = 0; i < rows * cols; ++i) w[i] = v.get_f32(i);
  double signal = 0, noise = 0, model = 0;
  std::vector<std::int8_t> q8v(w.size());
  std::vector<float> s8(static_cast<std::size_t>(rows));
  std::vector<std::uint8_t> q4v(w.size() / 2);
  std::vector<std::uint16_t> s4(w.size() / quant::kQ4Group);
  if (q8) quant::quantize_q8(w, rows, cols, q8v, s8); else quant::quantize_q4(w, rows, cols, q4v, s4);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (q8) quant::dequantize_q8_row(q8v.data(), s8.data(), r, cols, back.data());
    else quant::dequantize_q4_row(q4v.data(), s4.data(), r, cols, back.data());
    for (std::int64_t c = 0; c < cols; ++c) {
      const double x = w[r * cols + c], d = x - back[c];
      const double step = q8 ? s8[r] : f16_to_f32(s4[r * (cols / quant::kQ4Group) + c / quant::kQ4Group]);
      signal += x * x;
      noise += d * d;
      model += step * step / 12;
    }
  }
  return {10 * std::log10(signal / noise), 10 * std::log10(signal / model)};
}

TEST_F(QuantReport, WeightSqnrMatchesTheFormatsAndTheNoiseModel) {
  const auto base = Checkpoint::open(dir("bf16"));
  const auto q8 = Checkpoint::open(dir("q8")), q4 = Checkpoint::open(dir("q4"));
  const auto s8 = quant::weight_sqnr(base->weights(), q8->weights());
  const auto s4 = quant::weight_sqnr(base->weights(), q4->weights());
  ASSERT_FALSE(s8.empty());
  ASSERT_FALSE(s4.empty());
  std::map<std::string, double> by_name8, by_name4;
  for (const auto& t : s8) {
    EXPECT_EQ(t.quant_dtype, "I8") << t.name;  // only the quantized matrices differ
    by_name8[t.name] = t.sqnr_db;
  }
  for (const auto& t : s4) by_name4[t.name] = t.sqnr_db;
  // q4 keeps a matrix whose width is not a multiple of 32; every one it quantized loses more.
  for (const auto& [name, db4] : by_name4) {
    ASSERT_TRUE(by_name8.count(name)) << name;
    EXPECT_LT(db4, by_name8[name] - 15) << name;
  }

  // make-model draws uniform weights in [-a, a]: variance a^2 / 3, and with max|w| = a per row
  // (q8) or per 32 (q4) the noise model gives 10 log10(12 * 127^2 / 3) = 48.1 dB and
  // 10 log10(12 * 7^2 / 3) = 22.9 dB; a little more, since the largest |w| of a row or group
  // falls short of a (by a / (n + 1) on average: +0.1 dB for 64 columns, +0.3 dB for 32).
  const quant::SqnrSummary m8 = quant::summarize_sqnr(s8), m4 = quant::summarize_sqnr(s4);
  EXPECT_EQ(m8.exact, 0);
  EXPECT_GT(m8.min_db, 47.0);
  EXPECT_GT(m8.median_db, 47.9);
  EXPECT_LT(m8.median_db, 49.5);
  EXPECT_GT(m4.min_db, 21.0);
  EXPECT_GT(m4.median_db, 22.5);
  EXPECT_LT(m4.median_db, 24.5);

  const std::string name = "model.language_model.layers.0.mlp.down_proj.weight";
  const TensorView w = base->weights().get(name);
  const DirectSqnr d8 = direct_sqnr(w, true), d4 = direct_sqnr(w, false);
  EXPECT_NEAR(by_name8.at(name), d8.measured_db, 1e-9);
  EXPECT_NEAR(by_name4.at(name), d4.measured_db, 1e-9);
  EXPECT_NEAR(d8.measured_db, d8.model_db, 0.5);
  EXPECT_NEAR(d4.measured_db, d4.model_db, 1.0);
  RecordProperty("down_proj_q8_db", std::to_string(d8.measured_db));
  RecordProperty("down_proj_q4_db", std::to_string(d4.measured_db));
}

TEST_F(QuantReport, CheckpointAgainstItsCopyIsExact) {
  const std::string copy = dir("bf16_copy");
  fs::copy(dir("bf16"), copy, fs::copy_options::recursive);
  const auto r = report(copy, {"The capital of France is", "1, 2, 3,"});
  EXPECT_TRUE(r.tensors.empty());
  EXPECT_EQ(r.base_scheme, "none");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.overall.positions, r.prompts[0].tokens + r.prompts[1].tokens);
  EXPECT_GT(r.prompts[0].tokens, 3);
  EXPECT_EQ(r.overall.nmse(), 0.0);
  EXPECT_EQ(r.overall.max_abs_diff, 0.0);
  EXPECT_EQ(r.overall.top1(), 1.0);
  EXPECT_GT(r.overall.ref, 0.0);  // the logits were there
}

TEST_F(QuantReport, LogitsOfQ8CloserThanQ4) {
  const std::vector<std::string> prompts = {"Once upon a time, in a small village", "Q: Why is the sky blue? A:"};
  const auto r8 = report(dir("q8"), prompts), r4 = report(dir("q4"), prompts);
  EXPECT_EQ(r8.quant_scheme, "q8");
  EXPECT_GT(r8.overall.nmse(), 0.0);
  EXPECT_LT(r8.overall.nmse(), 0.02);
  EXPECT_GT(r4.overall.nmse(), r8.overall.nmse());
  EXPECT_GT(r4.overall.max_abs_diff, r8.overall.max_abs_diff);
  EXPECT_GE(r8.overall.top1(), 0.75);
  for (const auto& p : r8.prompts) EXPECT_LE(p.logits.max_abs_diff, r8.overall.max_abs_diff);
}

TEST_F(QuantReport, CliPrintsJsonAndWritesMarkdown) {
  const std::string prompts = dir("prompts.txt");
  write_text_atomic(prompts, "The capital of France is\n\nDear hiring manager,\n");
  const std::string md = dir("report.md");
  const auto r = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + dir("q8") + " --prompts " + prompts +
                                    " --threads 2 --json --out " + md);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["quant_scheme"], "q8");
  EXPECT_EQ(j["base_scheme"], "none");
  EXPECT_EQ(j["logits"]["prompts"].size(), 2u);  // the blank line skipped
  EXPECT_EQ(j["logits"]["prompts"][1]["prompt"], "Dear hiring manager,");
  EXPECT_EQ(j["weights"]["tensors"].size(), j["weights"]["tensors_differing"].get<std::size_t>());
  EXPECT_EQ(j["weights"]["worst"].size(), 5u);
  EXPECT_GT(j["weights"]["sqnr_db_min"].get<double>(), 40.0);
  const std::string text = read_file(md);
  EXPECT_NE(text.find("staticlm quant-report -m " + dir("bf16") + " -q " + dir("q8") + " --prompts " + prompts +
                      " --threads 2 --json --out " + md),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| top-1 agreement |"), std::string::npos) << text;

  const auto plain = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + dir("q4") + " --prompts " + prompts);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("quant    " + dir("q4") + " (q4)"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("top-1 agreement"), std::string::npos) << plain.out;
}

TEST_F(QuantReport, BadInputIsRefusedByName) {
  auto r = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + dir("bf16"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is the base checkpoint " + dir("bf16") + " itself"), std::string::npos) << r.err;

  r = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + dir("nowhere"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(dir("nowhere") + ": not a checkpoint directory"), std::string::npos) << r.err;

  // Another model: the q8 copy with a different sliding window.
  const std::string other = dir("q8_other_window");
  fs::copy(dir("q8"), other, fs::copy_options::recursive);
  auto config = nlohmann::ordered_json::parse(read_file(other + "/config.json"));
  config["text_config"]["sliding_window"] = 8;
  write_text_atomic(other + "/config.json", config.dump(2));
  r = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + other);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("describe different models: text_config/sliding_window is 16 vs 8"), std::string::npos)
      << r.err;

  const std::string empty = dir("empty_prompts.txt");
  write_text_atomic(empty, "\n\n");
  r = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + dir("q8") + " --prompts " + empty);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--prompts " + empty + ": no prompts"), std::string::npos) << r.err;

  r = test::run_staticlm("quant-report -m " + dir("bf16") + " -q " + dir("q8") + " --max-seq 4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("prompt 1 has"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace staticlm
