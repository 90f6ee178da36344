// Bad tokenizer.json files and bad input: each is refused with one clear message that names the
// file, the field or the value, and the right error kind; nothing crashes.
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/file.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

// A small valid tokenizer.json, with markers to replace.
std::string make_json(const std::string& normalizer = "null", const std::string& pre = "null",
                      const std::string& model_extra = "", const std::string& merges = R"([["a", "b"]])",
                      const std::string& vocab = R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3, "<s>": 4})",
                      const std::string& added = "[]", const std::string& post = "null", const std::string& decoder = "null",
                      const std::string& top_extra = "") {
  return R"({"version": "1.0", "truncation": null, "padding": null)" + top_extra + R"(, "added_tokens": )" + added +
         R"(, "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre + R"(, "post_processor": )" + post +
         R"(, "decoder": )" + decoder + R"(, "model": {"type": "BPE", "unk_token": "<unk>", "vocab": )" + vocab +
         R"(, "merges": )" + merges + model_extra + "}}";
}

void expect_error(const std::string& json, ErrorKind kind, const std::string& message) {
  try {
    Tokenizer::from_json(json, "tok.json");
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << "message: " << e.what() << "\nexpected: " << message;
    EXPECT_EQ(std::string(e.what()).rfind("tok.json", 0), 0u) << e.what();
  }
}

TEST(TokenizerErrors, ValidBaseFileLoads) {
  const auto tok = Tokenizer::from_json(make_json(), "tok.json");
  EXPECT_EQ(tok->encode("ab"), std::vector<int>{2});
  EXPECT_EQ(tok->encode("aab"), (std::vector<int>{0, 2}));
}

TEST(TokenizerErrors, FileStructure) {
  expect_error("{\"model\": ", ErrorKind::kInvalidFile, "tok.json: not valid JSON");
  expect_error("[1, 2]", ErrorKind::kInvalidFile, "top level: expected an object");
  expect_error("{\"added_tokens\": []}", ErrorKind::kInvalidFile, "missing field \"model\"");
  expect_error(make_json("null", "null", "", "[]", "[1]"), ErrorKind::kInvalidFile, "model.vocab: expected an object");
  expect_error(make_json("null", "null", "", "[]", R"({"a": "zero"})"), ErrorKind::kInvalidFile,
               "model.vocab[\"a\"]: expected an integer id from 0 to 2097149 (the limit)");
  // Found by fuzz/tokenizer_json_fuzz.cc (fuzz/regressions/tokenizer_json/): an id of 2^31 - 1
  // sized the id-indexed tables (and overflowed max_id + 1); the largest id passes, one more not.
  expect_error(make_json("null", "null", "", "[]", R"({"a": 0, "b": 2147483647})"), ErrorKind::kInvalidFile,
               "model.vocab[\"b\"]: expected an integer id from 0 to 2097149 (the limit)");
  expect_error(make_json("null", "null", "", "[]", R"({"a": 0, "b": 2097150})"), ErrorKind::kInvalidFile, "(the limit)");
  EXPECT_EQ(Tokenizer::from_json(make_json("null", "null", "", "[]", R"({"a": 0, "<unk>": 1, "b": 2097149})"), "tok.json")->encode("b"),
            std::vector<int>{2097149});
  expect_error(read_file(std::string(STATICLM_TEST_FIXTURES) + "/../../fuzz/regressions/tokenizer_json/vocab_id_int32_max.json"),
               ErrorKind::kInvalidFile, "(the limit)");
  expect_error(make_json("null", "null", "", "[]", R"({"a": 0, "b": 0})"), ErrorKind::kInvalidFile, "id 0 is given to both 'a' and 'b'");
  expect_error(make_json("null", "null", "", "[\"a b c\"]"), ErrorKind::kInvalidFile,
               "model.merges[0]: expected \"left right\" with exactly one space, got \"a b c\"");
  expect_error(make_json("null", "null", "", "[[\"a\"]]"), ErrorKind::kInvalidFile, "model.merges[0]: expected \"left right\" or");
  expect_error(make_json("null", "null", "", "[[\"a\", \"q\"]]"), ErrorKind::kInvalidFile,
               "model.merges[0]: token 'q' is not in the vocabulary");
  expect_error(make_json("null", "null", "", "[[\"b\", \"a\"]]"), ErrorKind::kInvalidFile,
               "model.merges[0]: the merged token 'ba' is not in the vocabulary");
  expect_error(make_json("null", "null", ", \"fuse_unk\": \"yes\""), ErrorKind::kInvalidFile, "model.fuse_unk: expected true or false");
}

TEST(TokenizerErrors, UnsupportedComponentsAreNamed) {
  expect_error(make_json(R"({"type": "BertNormalizer"})"), ErrorKind::kUnsupported, "normalizer type \"BertNormalizer\" is not supported");
  expect_error(make_json(R"({"type": "Sequence", "normalizers": [{"type": "Lowercase"}]})"), ErrorKind::kUnsupported,
               "normalizer.normalizers[0]: normalizer type \"Lowercase\" is not supported");
  expect_error(make_json("null", R"({"type": "Whitespace"})"), ErrorKind::kUnsupported, "pre-tokenizer type \"Whitespace\" is not supported");
  expect_error(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})", "[]",
                         R"({"type": "Sequence", "processors": [{"type": "ByteLevel"}, {"type": "BertProcessing"}]})"),
               ErrorKind::kUnsupported, "post_processor.processors[1]: post-processor type \"BertProcessing\" is not supported");
  expect_error(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})", "[]", "null",
                         R"({"type": "WordPiece"})"),
               ErrorKind::kUnsupported, "decoder type \"WordPiece\" is not supported");
  expect_error(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})", "[]",
                         R"({"type": "RobertaProcessing"})"),
               ErrorKind::kUnsupported, "post-processor type \"RobertaProcessing\" is not supported");
  expect_error(R"({"model": {"type": "WordPiece", "vocab": {}}})", ErrorKind::kUnsupported, "model type \"WordPiece\" is not supported");
  expect_error(make_json("null", "null", ", \"dropout\": 0.1"), ErrorKind::kUnsupported, "model.dropout: BPE dropout is not supported");
  expect_error(make_json("null", "null", ", \"continuing_subword_prefix\": \"##\""), ErrorKind::kUnsupported,
               "model.continuing_subword_prefix: is not supported");
  std::string truncated = make_json();
  truncated.replace(truncated.find("\"truncation\": null"), 18, "\"truncation\": {\"max_length\": 8}");
  expect_error(truncated, ErrorKind::kUnsupported, "truncation: is set; truncation and padding are not supported");
}

TEST(TokenizerErrors, BadComponentFields) {
  expect_error(make_json(R"({"type": "Replace", "pattern": {"Regex": "(a"}, "content": "x"})"), ErrorKind::kInvalidFile,
               "normalizer.pattern: bad regular expression \"(a\"");
  expect_error(make_json(R"({"type": "Replace", "pattern": {"Glob": "*"}, "content": "x"})"), ErrorKind::kInvalidFile,
               "normalizer.pattern: expected {\"String\": ...} or {\"Regex\": ...}");
  expect_error(make_json("null", R"({"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways", "invert": false})"),
               ErrorKind::kInvalidFile, "pre_tokenizer.behavior: expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got \"Sideways\"");
  expect_error(make_json("null", R"({"type": "Metaspace", "replacement": "ab"})"), ErrorKind::kInvalidFile,
               "pre_tokenizer.replacement: expected a single character, got \"ab\"");
  expect_error(make_json("null", R"({"type": "Metaspace", "replacement": "_", "prepend_scheme": "sometimes"})"), ErrorKind::kInvalidFile,
               "pre_tokenizer.prepend_scheme: expected \"always\", \"never\" or \"first\", got \"sometimes\"");
  expect_error(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})", "[]",
                         R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {}})"),
               ErrorKind::kInvalidFile, "post_processor.single[0]: special token \"<x>\" is not listed in post_processor.special_tokens");
  expect_error(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})",
                         R"([{"id": 7, "content": "a", "special": true}])"),
               ErrorKind::kInvalidFile, "added_tokens[0]: \"a\" has id 7 but the model vocabulary gives it id 0");
  expect_error(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})",
                         R"([{"id": 1, "content": "<new>", "special": true}])"),
               ErrorKind::kInvalidFile, "added_tokens[0]: id 1 of \"<new>\" belongs to \"b\" in the model vocabulary");
}

// One content listed at two new ids: token_to_id gives the larger id whatever the file's order
// (the lookup is filled in id order), and each id still decodes to the content.
TEST(TokenizerErrors, OneAddedContentAtTwoIdsLooksUpTheLargerId) {
  for (const std::string& added : {std::string(R"([{"id": 9, "content": "<x>", "special": true}, {"id": 7, "content": "<x>", "special": true}])"),
                                   std::string(R"([{"id": 7, "content": "<x>", "special": true}, {"id": 9, "content": "<x>", "special": true}])")}) {
    const auto tok = Tokenizer::from_json(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3})", added), "tok.json");
    EXPECT_EQ(tok->token_to_id("<x>"), 9) << added;
    EXPECT_EQ(tok->decode(std::vector<int>{7}, false), "<x>") << added;
    EXPECT_EQ(tok->decode(std::vector<int>{9}, false), "<x>") << added;
  }
}

// Replace steps that multiply the text (three steps each turning "a" into a thousand would make
// a billion bytes of one letter) are refused when a step would grow it more than 8x; the usual
// growth (" " -> "\u2581", three bytes for one) passes.
TEST(TokenizerErrors, NormalizerThatMultipliesTheTextIsRefused) {
  const std::string thousand = std::string(1000, 'a');
  const std::string step = R"({"type": "Replace", "pattern": {"String": "a"}, "content": ")" + thousand + R"("})";
  const auto tok = Tokenizer::from_json(make_json(R"({"type": "Sequence", "normalizers": [)" + step + "," + step + "," + step + "]}"), "tok.json");
  try {
    tok->encode("a");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("a Replace step would grow 1000000 bytes of text to 1000000000"), std::string::npos) << e.what();
  }
  const auto spaces = Tokenizer::from_json(
      make_json(R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})", "null", "", R"([["a", "b"]])",
                R"({"a": 0, "b": 1, "ab": 2, "<unk>": 3, "<s>": 4, "\u2581": 5})"),
      "tok.json");
  EXPECT_EQ(spaces->encode(std::string(30000, ' ')).size(), 30000u);
}

TEST(TokenizerErrors, BadInput) {
  const auto tok = Tokenizer::from_json(make_json(), "tok.json");
  try {
    tok->encode(std::string("a\xC3(", 3));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(), "text to encode is not valid UTF-8 (bad byte at offset 1)");
  }
  try {
    tok->decode(std::vector<int>{0, 99});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_STREQ(e.what(), "token id 99 is not in the vocabulary of tok.json (ids 0..4)");
  }
  // A character outside the vocabulary needs the unk token, which this vocabulary lacks.
  const auto no_unk = Tokenizer::from_json(make_json("null", "null", "", R"([["a", "b"]])", R"({"a": 0, "b": 1, "ab": 2})"), "t2.json");
  try {
    no_unk->encode("abc");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_STREQ(e.what(), "the unk_token '<unk>' is not in the vocabulary");
  }
  try {
    Tokenizer::load("/nonexistent/tokenizer.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace staticlm
