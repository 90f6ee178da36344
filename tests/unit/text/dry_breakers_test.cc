// DRY's sequence breakers as token ids (runtime/dry_breakers.h), on the real Gemma 4 vocabulary:
// the tokens whose text holds a breaker string, special tokens by their content.
#include "runtime/dry_breakers.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "base/error.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

bool has(const std::vector<std::int64_t>& ids, std::int64_t id) { return std::binary_search(ids.begin(), ids.end(), id); }

TEST(DryBreakers, TokensHoldingABreakerStringBreak) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  SamplingOptions s;
  s.dry_multiplier = 0.8;
  resolve_dry_breakers(s, &tok, "t");
  const std::vector<std::int64_t>& ids = s.dry_breaker_ids;
  ASSERT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  const auto id = [&](std::string_view token) {
    const int i = tok.token_to_id(token);
    EXPECT_GE(i, 0) << token;
    return static_cast<std::int64_t>(i);
  };
  EXPECT_TRUE(has(ids, id("<|\"|>")));  // a special token, by its content
  for (const int nl : tok.encode("\n")) EXPECT_TRUE(has(ids, nl));
  for (const int t : tok.encode("a: b * c \"d\"\nx")) {
    const std::string text = tok.decode(std::vector<int>{t}, false);
    const bool breaks = text.find_first_of(":*\"\n") != std::string::npos;
    EXPECT_EQ(has(ids, t), breaks) << "token " << t << " '" << text << "'";
  }
  EXPECT_FALSE(has(ids, 23391));  // "hello"
  EXPECT_FALSE(has(ids, id("<turn|>")));
  // Given breakers replace the defaults; DRY off resolves none.
  s.dry_sequence_breakers = {"ll"};
  resolve_dry_breakers(s, &tok, "t");
  EXPECT_TRUE(has(s.dry_breaker_ids, 23391));
  EXPECT_FALSE(has(s.dry_breaker_ids, id("<|\"|>")));
  s.dry_multiplier = 0;
  resolve_dry_breakers(s, &tok, "t");
  EXPECT_TRUE(s.dry_breaker_ids.empty());
}

TEST(DryBreakers, EmptyBreakersAndNoTokenizerAreRefusedByName) {
  SamplingOptions s;
  s.dry_multiplier = 1;
  resolve_dry_breakers(s, nullptr, "dry_sequence_breakers");  // the defaults need no tokenizer: none
  EXPECT_TRUE(s.dry_breaker_ids.empty());
  s.dry_sequence_breakers = {"x"};
  try {
    resolve_dry_breakers(s, nullptr, "dry_sequence_breakers");
    ADD_FAILURE() << "a breaker without a tokenizer was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dry_sequence_breakers: sequence breakers need the checkpoint's tokenizer.json"),
              std::string::npos)
        << e.what();
  }
  s.dry_sequence_breakers = {"a", ""};
  EXPECT_THROW(resolve_dry_breakers(s, &test::gemma4_tokenizer(), "t"), Error);
}

}  // namespace
}  // namespace staticlm
