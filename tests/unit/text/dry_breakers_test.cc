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

// The cache gives each list's own ids, however lists come and go past what it keeps; DRY off
// gives none; a refused list is refused every time.
TEST(DryBreakers, CacheGivesEachListsOwnIds) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  DryBreakerCache cache(&tok);
  std::vector<std::vector<std::string>> lists = {SamplingOptions{}.dry_sequence_breakers, {"ll"}, {}};
  for (const char* b : {"a", "b", "c", "d", "e", "f", "g", "h", "i"}) lists.push_back({b, "\n"});  // past kKept
  std::vector<std::vector<std::int64_t>> direct;
  for (const auto& list : lists) {
    SamplingOptions s;
    s.dry_multiplier = 1;
    s.dry_sequence_breakers = list;
    resolve_dry_breakers(s, &tok, "t");
    direct.push_back(s.dry_breaker_ids);
  }
  ASSERT_NE(direct[0], direct[1]);
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < lists.size(); ++i) {
      const std::size_t k = round == 1 ? lists.size() - 1 - i : (i * 5) % lists.size();
      SamplingOptions s;
      s.dry_multiplier = 1;
      s.dry_sequence_breakers = lists[k];
      cache.resolve(s, "t");
      EXPECT_EQ(s.dry_breaker_ids, direct[k]) << "round " << round << ", list " << k;
      s.dry_multiplier = 0;
      cache.resolve(s, "t");
      EXPECT_TRUE(s.dry_breaker_ids.empty());
    }
  }
  SamplingOptions bad;
  bad.dry_multiplier = 1;
  bad.dry_sequence_breakers = {""};
  EXPECT_THROW(cache.resolve(bad, "t"), Error);
  EXPECT_THROW(cache.resolve(bad, "t"), Error);
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
