// The tokenizer against independent references: ids from the Hugging Face `tokenizers` library
// (and @lenml/tokenizers, which agreed on every input) for the real Gemma vocabulary, written by
// tools/tokenizer_reference.mjs for the corpus that tools/make_text_corpus.py generates.
#include <gtest/gtest.h>

#include "text/detokenizer.h"
#include "text/utf8.h"
#include "text_test_util.h"

#if __has_include("model/gemma4_vocab.h")
#include "model/gemma4_vocab.h"
#define STATICLM_HAVE_GEMMA4_VOCAB 1
#endif

namespace staticlm {
namespace {

using test::corpus;
using test::fixture;
using test::read_jsonl;

std::string show(const std::string& s) { return nlohmann::json(s).dump().substr(0, 120); }

void expect_reference_ids(const Tokenizer& tok, const std::string& reference) {
  const std::vector<std::string> texts = corpus();
  const std::vector<nlohmann::json> expected = read_jsonl(fixture(reference));
  ASSERT_EQ(texts.size(), expected.size());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int> ids = tok.encode(texts[i]);
    const auto want = expected[i].get<std::vector<int>>();
    if (ids != want) {
      ++mismatches;
      ADD_FAILURE() << "corpus line " << i + 1 << " " << show(texts[i]) << ": got " << nlohmann::json(ids).dump().substr(0, 200)
                    << " want " << expected[i].dump().substr(0, 200);
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(TokenizerReference, CorpusIsLargeAndVaried) {
  const std::vector<std::string> texts = corpus();
  EXPECT_GE(texts.size(), 300u);
  std::size_t longest = 0;
  bool empty = false, crlf = false, zwj = false;
  for (const auto& t : texts) {
    longest = std::max(longest, t.size());
    empty = empty || t.empty();
    crlf = crlf || t.find("\r\n") != std::string::npos;
    zwj = zwj || t.find("\xE2\x80\x8D") != std::string::npos;
  }
  EXPECT_GE(longest, 20u * 1024);
  EXPECT_TRUE(empty);
  EXPECT_TRUE(crlf);
  EXPECT_TRUE(zwj);
}

// Byte-level BPE tokenizers as published (Llama 3, Qwen 3, Command R+: a regex Split or Digits,
// ByteLevel spelling, ignore_merges, NFC, a ByteLevel + TemplateProcessing post-processor, the
// ByteLevel decoder), which
// scripts/setup.sh fetches into .deps/byte-level-tokenizers: the corpus's ids, and the text of
// random id sequences (special tokens kept and skipped, pushed one id at a time into the
// incremental detokenizer too), equal the `tokenizers` library's (tools/tokenizer_reference.mjs
// wrote the fixtures).
TEST(TokenizerReference, ByteLevelTokenizersMatchTheTokenizersLibrary) {
  for (const std::string name : {"llama3", "qwen3", "command_r_plus"}) {
    SCOPED_TRACE(name);
    const std::string path = std::string(STATICLM_DEPS_DIR) + "/byte-level-tokenizers/" + name + ".json";
    ASSERT_TRUE(file_exists(path)) << path << " is missing: run scripts/setup.sh";
    const std::unique_ptr<Tokenizer> tok = Tokenizer::load(path);
    expect_reference_ids(*tok, "text/reference_ids_" + name + ".jsonl");
    const nlohmann::json cases = nlohmann::json::parse(read_file(fixture("text/decode_" + name + ".json")));
    ASSERT_GE(cases.size(), 300u);
    std::size_t replaced = 0;
    for (const auto& c : cases) {
      const auto ids = c["ids"].get<std::vector<int>>();
      const std::string text = c["text"].get<std::string>();
      EXPECT_EQ(tok->decode(ids), text) << c["ids"].dump();
      EXPECT_EQ(tok->decode(ids, true), c["text_skip"].get<std::string>()) << c["ids"].dump();
      IncrementalDetokenizer stream(*tok);
      std::string streamed;
      for (int id : ids) streamed += stream.push(id);
      streamed += stream.finish();
      EXPECT_EQ(streamed, text) << c["ids"].dump();
      replaced += text.find("\xEF\xBF\xBD") != std::string::npos;
    }
    EXPECT_GE(replaced, 10u);  // the cases reach lone and cut-short UTF-8 bytes
  }
}

TEST(TokenizerReference, Gemma3IdsMatchTheTokenizersLibrary) {
  STATICLM_REQUIRE_GEMMA3(tok);
  expect_reference_ids(*tok, "text/reference_ids_gemma3.jsonl");
}

// encode_at_most on the real vocabulary: the library's ids when they fit; else nullopt with a
// lower bound that the library's count does not undercut, on every corpus text and on long runs
// without spaces (one BPE piece each, refused by length before they are merged).
TEST(TokenizerReference, Gemma3BoundedEncodeAgreesWithTheFullCount) {
  STATICLM_REQUIRE_GEMMA3(tok);
  const std::vector<std::string> texts = corpus();
  const std::vector<nlohmann::json> expected = read_jsonl(fixture("text/reference_ids_gemma3.jsonl"));
  ASSERT_EQ(texts.size(), expected.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto want = expected[i].get<std::vector<int>>();
    EXPECT_EQ(tok->encode_at_most(texts[i], want.size()), want) << show(texts[i]);
    for (const std::size_t max : {want.size() / 2, want.size() - 1}) {
      if (want.empty()) break;
      Tokenizer::TokenCount count;
      EXPECT_EQ(tok->encode_at_most(texts[i], max, false, &count), std::nullopt) << show(texts[i]);
      EXPECT_EQ(count.tokens, want.size()) << show(texts[i]);
    }
  }
  const std::size_t long_text = Tokenizer::kExactCountBytes + 1000;
  for (const std::string& run : {std::string(long_text, 'a'), std::string(long_text, '7'), [&] {
         std::string s;
         while (s.size() < long_text) s += "\xE6\x97\xA5\xF0\x9F\x98\x80";  // 日😀
         return s;
       }()}) {
    const std::size_t tokens = tok->encode(run).size();
    Tokenizer::TokenCount count;
    EXPECT_EQ(tok->encode_at_most(run, 2048, false, &count), std::nullopt);
    EXPECT_FALSE(count.exact);
    EXPECT_GT(count.tokens, 2048u);
    EXPECT_LE(count.tokens, tokens);
  }
}

TEST(TokenizerReference, Gemma3DecodeInvertsEncode) {
  STATICLM_REQUIRE_GEMMA3(tok);
  // The normalizer maps " " to U+2581 and the decoder maps U+2581 back to " ", so only texts
  // that already hold U+2581 do not come back.
  std::size_t checked = 0;
  for (const std::string& text : corpus()) {
    if (text.find("\xE2\x96\x81") != std::string::npos) continue;
    EXPECT_EQ(tok->decode(tok->encode(text)), text) << show(text);
    ++checked;
  }
  EXPECT_GE(checked, 300u);
}

TEST(TokenizerReference, Gemma3SpecialTokens) {
  STATICLM_REQUIRE_GEMMA3(tok);
  EXPECT_EQ(tok->token_to_id("<bos>"), 2);
  EXPECT_EQ(tok->token_to_id("<start_of_turn>"), 105);
  EXPECT_EQ(tok->token_to_id("\n"), 107);
  EXPECT_TRUE(tok->is_special(2));
  EXPECT_FALSE(tok->is_special(107));
  EXPECT_EQ(tok->id_limit(), 262145);  // 262144 pieces and the added <image_soft_token>
  // The post-processor adds <bos> only on request.
  const std::vector<int> plain = tok->encode("Hello world");
  std::vector<int> with_bos = {2};
  with_bos.insert(with_bos.end(), plain.begin(), plain.end());
  EXPECT_EQ(tok->encode("Hello world", true), with_bos);
  // Special tokens are kept or skipped on decode.
  const std::vector<int> ids = tok->encode("<start_of_turn>user\nHi<end_of_turn>", true);
  EXPECT_EQ(tok->decode(ids), "<bos><start_of_turn>user\nHi<end_of_turn>");
  EXPECT_EQ(tok->decode(ids, true), "user\nHi");
}

#ifdef STATICLM_HAVE_GEMMA4_VOCAB
// FNV-1a 64 of "id\ttoken\n" over every id, as tools/tokenizer_reference.mjs computes it.
std::string vocab_digest(const Tokenizer& tok) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (int id = 0; id < tok.id_limit(); ++id) {
    const auto t = tok.id_to_token(id);
    if (!t) continue;
    const std::string line = std::to_string(id) + "\t" + std::string(*t) + "\n";
    for (unsigned char c : line) h = (h ^ c) * 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}
#endif

TEST(TokenizerReference, Gemma4IdsMatchTheTokenizersLibrary) {
#ifndef STATICLM_HAVE_GEMMA4_VOCAB
  GTEST_SKIP() << "model/gemma4_vocab.h (gemma4_tokenizer_json) is not in this tree yet";
#else
  const std::string path = test::gemma3_tokenizer_path();
  if (path.empty()) GTEST_SKIP() << "the Gemma tokenizer.json is missing (run scripts/setup.sh)";
  const auto tok = Tokenizer::from_json(gemma4_tokenizer_json(read_file(path), path), "gemma4 tokenizer.json");
  // The JavaScript side renamed the vocabulary on its own (spec §6.1): both must agree exactly.
  const nlohmann::json digest = nlohmann::json::parse(read_file(fixture("text/gemma4_vocab_digest.json")));
  EXPECT_EQ(tok->id_limit(), digest["id_limit"].get<int>());
  EXPECT_EQ(vocab_digest(*tok), digest["tokens_fnv1a64"].get<std::string>());
  for (const auto& [id, name] : digest["renamed"].items()) EXPECT_EQ(tok->token_to_id(name.get<std::string>()), std::stoi(id)) << name;
  std::vector<int> special;
  for (int id = 0; id < tok->id_limit(); ++id) {
    if (tok->is_special(id)) special.push_back(id);
  }
  EXPECT_EQ(special, digest["special_ids"].get<std::vector<int>>());
  expect_reference_ids(*tok, "text/reference_ids.jsonl");
#endif
}

}  // namespace
}  // namespace staticlm
