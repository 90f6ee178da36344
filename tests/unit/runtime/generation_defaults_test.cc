#include "runtime/generation_defaults.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/error.h"
#include "runtime/logits_dump.h"
#include "test_util.h"

namespace staticlm {
namespace {

TEST(GenerationDefaults, EosFromGenerationConfigElseConfig) {
  ModelConfig c;
  c.eos_token_id = {1, 106};
  EXPECT_EQ(resolve_eos_ids(c, std::nullopt), (std::vector<std::int64_t>{1, 106}));
  GenerationConfig g;
  EXPECT_EQ(resolve_eos_ids(c, g), (std::vector<std::int64_t>{1, 106}));  // empty list: config.json's
  g.eos_token_id = {1, 106, 50};
  EXPECT_EQ(resolve_eos_ids(c, g), (std::vector<std::int64_t>{1, 106, 50}));
}

TEST(GenerationDefaults, SamplingFromGenerationConfig) {
  EXPECT_TRUE(sampling_defaults(std::nullopt).greedy());
  GenerationConfig g;
  g.do_sample = false;
  g.temperature = 0.7;
  EXPECT_TRUE(sampling_defaults(g).greedy());
  g.do_sample = true;
  g.temperature = 1.0;
  g.top_k = 64;
  g.top_p = 0.95;
  const SamplingOptions o = sampling_defaults(g);
  EXPECT_FALSE(o.greedy());
  EXPECT_EQ(o.temperature, 1.0);
  EXPECT_EQ(o.top_k, 64);
  EXPECT_EQ(o.top_p, 0.95);
  EXPECT_EQ(o.min_p, 0.0);
  EXPECT_EQ(o.typical_p, 1.0);
  g.typical_p = 0.9;  // transformers' TypicalLogitsWarper
  EXPECT_EQ(sampling_defaults(g).typical_p, 0.9);
  g.do_sample = false;
  EXPECT_EQ(sampling_defaults(g).typical_p, 1.0);
}

TEST(ParseTokenIds, Parses) {
  EXPECT_EQ(parse_token_ids("2,105, 2364 ,7", 262144, "--prompt-ids"), (std::vector<std::int64_t>{2, 105, 2364, 7}));
  EXPECT_EQ(parse_token_ids("0", 10, "x"), (std::vector<std::int64_t>{0}));
}

TEST(ParseTokenIds, BadItemsAreNamed) {
  try {
    parse_token_ids("2,x5,3", 100, "--prompt-ids");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "--prompt-ids: \"x5\" (item 2) is not a token id; expected comma-separated integers such as 2,105,2364");
  }
  try {
    parse_token_ids("2,100", 100, "--prompt-ids");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--prompt-ids: token id 100 (item 2) is outside the vocabulary [0, 100)");
  }
  EXPECT_THROW(parse_token_ids("", 100, "x"), Error);
  EXPECT_THROW(parse_token_ids("1,,2", 100, "x"), Error);
  EXPECT_THROW(parse_token_ids("-1", 100, "x"), Error);
}

TEST(LogitsDump, RoundTrips) {
  test::TempDir dir;
  LogitsDump d;
  d.prefill_logits = {1, 2, 3};
  d.decode_logits = {4, 5, 6, 7, 8, 9};
  d.tokens = {2, 0, 1};
  write_logits_dump(dir.file("d.safetensors"), d);
  const LogitsDump back = read_logits_dump(dir.file("d.safetensors"));
  EXPECT_EQ(back.prefill_logits, d.prefill_logits);
  EXPECT_EQ(back.decode_logits, d.decode_logits);
  EXPECT_EQ(back.tokens, d.tokens);
}

TEST(LogitsDump, OneTokenHasNoDecodeRows) {
  test::TempDir dir;
  LogitsDump d;
  d.prefill_logits = {1, 2};
  d.tokens = {1};
  write_logits_dump(dir.file("d.safetensors"), d);
  const LogitsDump back = read_logits_dump(dir.file("d.safetensors"));
  EXPECT_TRUE(back.decode_logits.empty());
  EXPECT_EQ(back.tokens, d.tokens);
}

TEST(LogitsDump, MismatchedSizesAreRefused) {
  test::TempDir dir;
  LogitsDump d;
  d.prefill_logits = {1, 2};
  d.decode_logits = {1, 2, 3};
  d.tokens = {1, 2};
  try {
    write_logits_dump(dir.file("d.safetensors"), d);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "logits dump: 2 tokens need 1 x 2 decode logits, got 3 values");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("d.safetensors")));
}

}  // namespace
}  // namespace staticlm
