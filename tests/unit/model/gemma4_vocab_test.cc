// The Gemma 4 vocabulary derived from Gemma 3's tokenizer.json (spec/gemma4.md 6.1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "model/gemma4_vocab.h"
#include "test_util.h"

namespace staticlm {
namespace {

class Gemma4VocabTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string path = test::gemma3_tokenizer_path();
    if (path.empty()) return;
    gemma3_ = new nlohmann::json(nlohmann::json::parse(read_file(path)));
    gemma4_ = new nlohmann::json(nlohmann::json::parse(gemma4_tokenizer_json(read_file(path), path)));
  }
  static void TearDownTestSuite() {
    delete gemma3_;
    delete gemma4_;
  }
  void SetUp() override {
    if (!gemma4_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
  }
  static std::map<std::int64_t, std::string> id_to_piece(const nlohmann::json& j) {
    std::map<std::int64_t, std::string> m;
    for (auto it = j["model"]["vocab"].begin(); it != j["model"]["vocab"].end(); ++it) m[it.value()] = it.key();
    return m;
  }
  static nlohmann::json* gemma3_;
  static nlohmann::json* gemma4_;
};
nlohmann::json* Gemma4VocabTest::gemma3_ = nullptr;
nlohmann::json* Gemma4VocabTest::gemma4_ = nullptr;

TEST_F(Gemma4VocabTest, RenamesTheNineteenIds) {
  auto pieces = id_to_piece(*gemma4_);
  ASSERT_EQ(pieces.size(), 262144u);
  EXPECT_EQ(pieces[46], "<|tool>");
  EXPECT_EQ(pieces[52], "<|\"|>");
  EXPECT_EQ(pieces[98], "<|think|>");
  EXPECT_EQ(pieces[100], "<|channel>");
  EXPECT_EQ(pieces[105], "<|turn>");
  EXPECT_EQ(pieces[106], "<turn|>");
  EXPECT_EQ(pieces[107], "\n");
  EXPECT_EQ(pieces[255999], "<|image>");
  EXPECT_EQ(pieces[256000], "<|audio>");
  EXPECT_EQ(pieces[258880], "<|image|>");
  EXPECT_EQ(pieces[258882], "<image|>");
  EXPECT_EQ(pieces[258884], "<|video|>");
  EXPECT_EQ(pieces[0], "<pad>");
  EXPECT_EQ(pieces[2], "<bos>");
}

TEST_F(Gemma4VocabTest, RenumbersUnusedSlotsInIdOrder) {
  auto pieces = id_to_piece(*gemma4_);
  EXPECT_EQ(pieces[6], "<unused0>");
  EXPECT_EQ(pieces[45], "<unused39>");
  EXPECT_EQ(pieces[53], "<unused40>");  // spec 6.1: Gemma 4's id 53
  // Every <unusedN> counts up by one in id order, with no gaps.
  std::int64_t expected = 0;
  for (const auto& [id, piece] : pieces) {
    if (piece.rfind("<unused", 0) == 0) {
      ASSERT_EQ(piece, "<unused" + std::to_string(expected) + ">") << "id " << id;
      ++expected;
    }
  }
  // Gemma 3 has 6242 unused slots (<unused0>..<unused6241>); 15 of them are renamed.
  EXPECT_EQ(expected, 6242 - 15);
}

TEST_F(Gemma4VocabTest, EverythingElseIsUnchanged) {
  auto before = id_to_piece(*gemma3_);
  auto after = id_to_piece(*gemma4_);
  std::int64_t differing = 0;
  for (const auto& [id, piece] : before) {
    if (piece != after[id] && piece.rfind("<unused", 0) != 0) ++differing;
  }
  EXPECT_EQ(differing, 4);  // 105, 106, 255999, 256000: the renamed non-unused ids
  EXPECT_EQ((*gemma3_)["model"]["merges"], (*gemma4_)["model"]["merges"]);
  EXPECT_EQ((*gemma3_)["normalizer"], (*gemma4_)["normalizer"]);
  EXPECT_EQ((*gemma3_)["decoder"], (*gemma4_)["decoder"]);
}

TEST_F(Gemma4VocabTest, AddedTokensFollowTheVocabulary) {
  auto pieces = id_to_piece(*gemma4_);
  std::int64_t specials = 0;
  for (const auto& t : (*gemma4_)["added_tokens"]) {
    const std::int64_t id = t["id"];
    ASSERT_LT(id, 262144) << "Gemma 3's <image_soft_token> must be dropped";
    EXPECT_EQ(t["content"], pieces[id]);
    if (t["special"].get<bool>()) {
      ++specials;
      EXPECT_TRUE(gemma4_is_control_token(id)) << id;
    }
  }
  EXPECT_EQ(specials, 17);
  for (const auto& t : (*gemma4_)["added_tokens"]) {
    if (t["id"] == 48 || t["id"] == 100) {
      EXPECT_FALSE(t["special"].get<bool>());
    }
  }
}

TEST(Gemma4VocabErrors, RejectsWhatIsNotGemma3) {
  try {
    gemma4_tokenizer_json("{\"model\": {\"vocab\": {\"a\": 0}}}", "x/tokenizer.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x/tokenizer.json: model.vocab has 1 entries, expected 262144"), std::string::npos)
        << e.what();
  }
  try {
    gemma4_tokenizer_json("not json", "y.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "y.json: not a JSON object");
  }
}

}  // namespace
}  // namespace staticlm
