// IncrementalDetokenizer: ids fed one at a time give, joined, exactly Tokenizer::decode of them
// all (computed the other way), and no released piece ever holds half a character.
#include <gtest/gtest.h>

#include "base/error.h"
#include "text/detokenizer.h"
#include "text/utf8.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

TEST(Detokenizer, StreamingEqualsWholeDecodeOnTheCorpus) {
  STATICLM_REQUIRE_GEMMA3(tok);
  for (const std::string& text : test::corpus()) {
    const std::vector<int> ids = tok->encode(text, true);
    IncrementalDetokenizer detok(*tok);
    std::string streamed;
    for (int id : ids) {
      const std::string piece = detok.push(id);
      ASSERT_TRUE(is_valid_utf8(piece));
      // The corpus holds U+FFFD only where the input did; a released piece never invents one.
      if (text.find(kReplacement) == std::string::npos) {
        ASSERT_EQ(piece.find(kReplacement), std::string::npos) << text;
      }
      streamed += piece;
    }
    streamed += detok.finish();
    ASSERT_EQ(streamed, tok->decode(ids)) << nlohmann::json(text).dump();
  }
}

TEST(Detokenizer, ByteFallbackCharacterComesOutWhole) {
  STATICLM_REQUIRE_GEMMA3(tok);
  // U+0F00 (Tibetan om) is not a piece: byte fallback spells it <0xE0> <0xBC> <0x80>.
  const std::vector<int> ids = tok->encode("a\xE0\xBC\x80" "b");
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(*tok->id_to_token(ids[1]), "<0xE0>");
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.push(ids[0]), "a");
  EXPECT_EQ(detok.push(ids[1]), "");
  EXPECT_EQ(detok.push(ids[2]), "");
  EXPECT_EQ(detok.push(ids[3]), "\xE0\xBC\x80");
  EXPECT_EQ(detok.push(ids[4]), "b");
  EXPECT_EQ(detok.finish(), "");
}

TEST(Detokenizer, UnfinishedCharacterIsFlushedAsReplacement) {
  STATICLM_REQUIRE_GEMMA3(tok);
  const int e = tok->token_to_id("<0xEE>"), x = tok->token_to_id("<0x80>");
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.push(e), "");
  EXPECT_EQ(detok.push(x), "");
  // Two bytes of a three-byte character: decode gives one U+FFFD per byte.
  EXPECT_EQ(detok.finish(), std::string(kReplacement) + std::string(kReplacement));
  EXPECT_TRUE(detok.ids().empty());
}

TEST(Detokenizer, SkipsSpecialTokensWhenAsked) {
  STATICLM_REQUIRE_GEMMA3(tok);
  IncrementalDetokenizer detok(*tok, /*skip_special_tokens=*/true);
  std::string out;
  for (int id : tok->encode("<start_of_turn>model\nHi there<end_of_turn>", true)) out += detok.push(id);
  out += detok.finish();
  EXPECT_EQ(out, "model\nHi there");
}

TEST(Detokenizer, RejectsUnknownIds) {
  STATICLM_REQUIRE_GEMMA3(tok);
  IncrementalDetokenizer detok(*tok);
  try {
    detok.push(1 << 30);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("token id 1073741824 is not in the vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(detok.ids().empty());
}

}  // namespace
}  // namespace staticlm
