// Every supported component on small tokenizer.json files: added tokens (special, lstrip, rstrip,
// single_word, normalized), Replace / Prepend / NFC / NFD / NFKC normalizers, Split in each
// behaviour (and inverted), Metaspace (always, first, split or not), BPE (merge order, byte
// fallback, unk with and without fuse, ignore_merges, both merge forms), TemplateProcessing and
// the decoders. Expected ids and text come from the `tokenizers` library (tools/tokenizer_cases.mjs).
// encode_at_most is held to the same ids, and its lower bound to the library's count.
#include <gtest/gtest.h>

#include <filesystem>

#include "text_test_util.h"

namespace staticlm {
namespace {

std::vector<std::string> case_files() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(test::fixture("text/cases"))) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TokenizerCases, AllComponentsMatchTheTokenizersLibrary) {
  const std::vector<std::string> files = case_files();
  ASSERT_GE(files.size(), 17u);
  std::size_t rows = 0;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const nlohmann::json doc = nlohmann::json::parse(read_file(file));
    const auto tok = Tokenizer::from_json(doc["tokenizer"].dump(), file);
    for (const auto& row : doc["cases"]) {
      const std::string text = row["text"].get<std::string>();
      SCOPED_TRACE(nlohmann::json(text).dump());
      const auto ids = row["ids"].get<std::vector<int>>();
      const auto ids_bos = row["ids_bos"].get<std::vector<int>>();
      EXPECT_EQ(tok->encode(text), ids);
      EXPECT_EQ(tok->encode(text, true), ids_bos);
      // The bounded encode: the ids when they fit, else nullopt with a true lower bound.
      for (const bool bos : {false, true}) {
        const std::vector<int>& want = bos ? ids_bos : ids;
        EXPECT_EQ(tok->encode_at_most(text, want.size(), bos), want);
        if (want.empty()) continue;
        Tokenizer::TokenCount count;
        EXPECT_EQ(tok->encode_at_most(text, want.size() - 1, bos, &count), std::nullopt);
        EXPECT_EQ(count.tokens, want.size());  // a short text's count is exact
        EXPECT_TRUE(count.exact);
      }
      if (!row["decoded"].is_null()) {
        EXPECT_EQ(tok->decode(ids), row["decoded"].get<std::string>());
      }
      if (!row["decoded_skip"].is_null()) {
        EXPECT_EQ(tok->decode(ids_bos, true), row["decoded_skip"].get<std::string>());
      }
      ++rows;
    }
  }
  EXPECT_GE(rows, 1000u);
}

// Without parse_special (llama-server's /tokenize parse_special: false) a special added token
// written in the text is that text: the same ids as the tokenizer without its special added
// tokens, in both passes (tokens matched before and after normalization).
TEST(TokenizerCases, SpecialTokensNotParsedAreTheirText) {
  std::size_t rows = 0, files_with_special = 0;
  for (const std::string& file : case_files()) {
    SCOPED_TRACE(file);
    const nlohmann::json doc = nlohmann::json::parse(read_file(file));
    nlohmann::json plain = doc["tokenizer"];
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& t : plain["added_tokens"]) {
      if (!t.value("special", false)) kept.push_back(t);
    }
    if (kept.size() == plain["added_tokens"].size()) continue;
    ++files_with_special;
    plain["added_tokens"] = kept;
    const auto tok = Tokenizer::from_json(doc["tokenizer"].dump(), file);
    const auto without = Tokenizer::from_json(plain.dump(), file);
    for (const auto& row : doc["cases"]) {
      const std::string text = row["text"].get<std::string>();
      SCOPED_TRACE(nlohmann::json(text).dump());
      EXPECT_EQ(tok->encode(text, false, /*parse_special=*/false), without->encode(text));
      ++rows;
    }
  }
  EXPECT_GE(files_with_special, 2u);
  EXPECT_GE(rows, 100u);
}

// Past kExactCountBytes encode_at_most gives up on a text by the length of its pieces; the lower bound it
// reports must hold for every component (an unk fused over a run, characters dropped without an
// unk: no bound by length there).
TEST(TokenizerCases, BoundedEncodeOfLongTextsKeepsATrueLowerBound) {
  for (const std::string& file : case_files()) {
    SCOPED_TRACE(file);
    const nlohmann::json doc = nlohmann::json::parse(read_file(file));
    const auto tok = Tokenizer::from_json(doc["tokenizer"].dump(), file);
    std::string all;
    for (const auto& row : doc["cases"]) all += row["text"].get<std::string>() + " ";
    std::string text;
    while (text.size() <= Tokenizer::kExactCountBytes) text += all;
    const std::vector<int> ids = tok->encode(text);
    ASSERT_GT(ids.size(), 1u);
    EXPECT_EQ(tok->encode_at_most(text, ids.size()), ids);
    for (const std::size_t max : {std::size_t{0}, ids.size() / 100, ids.size() - 1}) {
      Tokenizer::TokenCount count;
      EXPECT_EQ(tok->encode_at_most(text, max, false, &count), std::nullopt);
      EXPECT_GT(count.tokens, max);
      EXPECT_LE(count.tokens, ids.size());
    }
  }
}

}  // namespace
}  // namespace staticlm
