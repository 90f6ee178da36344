// staticlm bench: decode speed next to the measured memory bandwidth.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"

namespace staticlm {
namespace {

TEST(Bench, ReportsSpeedAgainstBandwidth) {
  if (test::gemma3_tokenizer_path().empty()) GTEST_SKIP() << "tokenizer not fetched";
  test::TempDir dir;
  auto made = test::run_staticlm("make-model --preset tiny --seed 5 --out " + dir.path());
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto r = test::run_staticlm("bench -m " + dir.path() + " -p 8 -n 4 --max-seq 64 --threads 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
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
  const double fraction = j["decode_fraction_of_bandwidth"];
  EXPECT_NEAR(fraction, j["decode_tok_s"].get<double>() * bytes / 1e9 / j["read_bandwidth_gb_s"].get<double>(), 1e-9);

  auto bad = test::run_staticlm("bench -m " + dir.path() + " -p 60 -n 4 --max-seq 64");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("do not fit max_seq 64"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace staticlm
