// The tokenize, detokenize and chat-format commands, run as a user would (the CLI binary), with
// outputs checked against the reference fixtures and error messages checked word for word.
#include <gtest/gtest.h>

#include <fstream>

#include "model/gemma4_vocab.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

using test::run_staticlm;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string tokenizer_flag() { return "--tokenizer " + quoted(test::gemma3_tokenizer_path()); }

TEST(TextCli, TokenizeJsonlMatchesTheReference) {
  STATICLM_REQUIRE_GEMMA3(tok);
  (void)tok;
  const auto r = run_staticlm("tokenize " + tokenizer_flag() + " --jsonl " + quoted(test::fixture("text/corpus.jsonl")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(test::fixture("text/reference_ids_gemma3.jsonl")));
}

TEST(TextCli, TokenizeTextAndDetokenize) {
  STATICLM_REQUIRE_GEMMA3(tok);
  (void)tok;
  auto r = run_staticlm("tokenize " + tokenizer_flag() + " --text 'Hello world' --bos --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[2,9259,1902]\n");  // ids from the tokenizers library
  r = run_staticlm("tokenize " + tokenizer_flag() + " --text 'Hello world'");
  EXPECT_EQ(r.out, "9259 1902\n");
  r = run_staticlm("detokenize " + tokenizer_flag() + " --ids 2,9259,1902");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<bos>Hello world");
  r = run_staticlm("detokenize " + tokenizer_flag() + " --ids '2, 9259,1902' --skip-special");
  EXPECT_EQ(r.out, "Hello world");
}

TEST(TextCli, ModelDirectoryStandsInForTokenizer) {
  STATICLM_REQUIRE_GEMMA3(tok);
  (void)tok;
  test::TempDir dir;
  std::filesystem::copy_file(test::gemma3_tokenizer_path(), dir.file("tokenizer.json"));
  const auto r = run_staticlm("tokenize -m " + quoted(dir.path()) + " --text 'Hello world' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[9259,1902]\n");
}

TEST(TextCli, ChatFormatPrintsThePromptExactly) {
  auto r = run_staticlm("chat-format --prompt 'Write a poem about Machine Learning.'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<bos><|turn>user\nWrite a poem about Machine Learning.<turn|>\n<|turn>model\n");
  r = run_staticlm("chat-format --prompt 'What is shown in this image?' --image cow.png --system 'You are a helpful assistant.'");
  EXPECT_EQ(r.out,
            "<bos><|turn>system\nYou are a helpful assistant.<turn|>\n<|turn>user\n<|image|>What is shown in this image?<turn|>\n"
            "<|turn>model\n");
  test::TempDir dir;
  std::ofstream(dir.file("m.json")) << R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
                                          {"role": "user", "content": "Bye"}])";
  r = run_staticlm("chat-format --messages " + quoted(dir.file("m.json")) + " --thinking");
  EXPECT_EQ(r.out, "<bos><|turn>system\n<|think|><turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\nHello<turn|>\n<|turn>user\nBye<turn|>\n<|turn>model\n");
}

TEST(TextCli, ChatFormatChecksTheVocabulary) {
  STATICLM_REQUIRE_GEMMA3(tok);
  (void)tok;
  // The Gemma 3 file has no <|turn>: it is not a Gemma 4 vocabulary.
  const auto r = run_staticlm("chat-format " + tokenizer_flag() + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: " + test::gemma3_tokenizer_path() + " has no <|turn> token: it is not a Gemma 4 vocabulary\n");
}

TEST(TextCli, ChatFormatIdsWithTheGemma4Vocabulary) {
  STATICLM_REQUIRE_GEMMA3(tok);
  (void)tok;
  test::TempDir dir;
  const std::string g3 = test::gemma3_tokenizer_path();
  write_text_atomic(dir.file("tokenizer.json"), gemma4_tokenizer_json(read_file(g3), g3));
  std::ofstream(dir.file("m.json")) << R"([{"role": "user", "content": "Hi"}])";
  const auto r = run_staticlm("chat-format -m " + quoted(dir.path()) + " --messages " + quoted(dir.file("m.json")) + " --ids");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // <bos>, then the ids the tokenizers library gives "<|turn>user\nHi<turn|>\n<|turn>model\n" on
  // the Gemma 4 vocabulary (a line of tests/fixtures/text/reference_ids.jsonl).
  EXPECT_EQ(r.out, "2 105 2364 107 10979 106 107 105 4368 107\n");
  const auto text = run_staticlm("detokenize -m " + quoted(dir.path()) + " --ids 2,105,2364,107,10979,106,107,105,4368,107");
  EXPECT_EQ(text.out, "<bos><|turn>user\nHi<turn|>\n<|turn>model\n");
}

TEST(TextCli, BadUsageAndInput) {
  test::TempDir dir;
  std::ofstream(dir.file("bad.jsonl")) << "\"ok\"\n42\n";
  std::ofstream(dir.file("m.json")) << R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])";
  std::ofstream(dir.file("tok.json")) << R"({"model": {"type": "Unigram", "vocab": []}})";
  const std::string tok = "--tokenizer " + quoted(dir.file("tok.json"));
  struct Case {
    std::string args, err;
  };
  const std::vector<Case> cases = {
      {"tokenize --text hi", "error: --tokenizer FILE (or -m DIR) is required\n"},
      {"tokenize -m " + quoted(dir.path()) + " --text hi", "error: model directory " + dir.path() + " has no tokenizer.json\n"},
      {"tokenize " + tok + " --text hi --jsonl x", "error: give exactly one of --text and --jsonl\n"},
      {"tokenize " + tok + " --text hi", "error: " + dir.file("tok.json") + ": model: model type \"Unigram\" is not supported (supported: BPE)\n"},
      {"detokenize " + tok + " --ids 1,x", "error: --ids: \"x\" is not a token id (expected a non-negative integer)\n"},
      {"detokenize " + tok + " --ids 1,,2", "error: --ids: empty item in \"1,,2\" (expected ids separated by commas)\n"},
      {"chat-format", "error: give exactly one of --prompt and --messages\n"},
      {"chat-format --messages " + quoted(dir.file("m.json")),
       "error: " + dir.file("m.json") + ": messages[1]: a user message follows a user message; turns must alternate user and assistant, starting with user\n"},
      {"chat-format --prompt hi --ids", "error: --ids needs a tokenizer: give -m DIR or --tokenizer FILE\n"},
  };
  for (const Case& c : cases) {
    const auto r = run_staticlm(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
}

TEST(TextCli, BadJsonlLineIsNamed) {
  STATICLM_REQUIRE_GEMMA3(tok);
  (void)tok;
  test::TempDir dir;
  std::ofstream(dir.file("in.jsonl")) << "\"ok\"\n42\n";
  const auto r = run_staticlm("tokenize " + tokenizer_flag() + " --jsonl " + quoted(dir.file("in.jsonl")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "error: " + dir.file("in.jsonl") + ":2: expected a JSON string\n");
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace staticlm
