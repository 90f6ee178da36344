// ToolCallStream on the real Gemma 4 vocabulary (the Gemma 3 tokenizer.json renamed as
// spec/gemma4.md §6.1 says): a reply's ids, pushed one at a time, give the text a client shows
// and the tool calls, the same as parsing the whole decoded reply at once.
#include "text/tool_call_stream.h"

#include <gtest/gtest.h>

#include "base/file.h"
#include "model/gemma4_vocab.h"
#include "test_util.h"

namespace staticlm {
namespace {

const Tokenizer& gemma4() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    const std::string path = test::gemma3_tokenizer_path();
    EXPECT_FALSE(path.empty()) << "the Gemma tokenizer.json is missing: run scripts/setup.sh";
    return Tokenizer::from_json(gemma4_tokenizer_json(read_file(path), path), "gemma4 tokenizer.json");
  }();
  return *tok;
}

struct Streamed {
  std::string text;
  std::vector<ToolCall> calls;
};

Streamed stream(const std::string& reply) {
  const Tokenizer& tok = gemma4();
  ToolCallStream s(tok);
  Streamed out;
  for (int id : tok.encode(reply)) out.text += s.push(id);
  out.text += s.finish();
  out.calls = s.calls();
  return out;
}

TEST(ToolCallStream, CallsTakenOutOfTheText) {
  const std::string reply =
      "Let me check.<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3}<tool_call|>"
      "<|tool_call>call:ping{}<tool_call|> Done.<turn|>";
  ASSERT_EQ(gemma4().encode("<|tool_call>").size(), 1u) << "the marker is one special token";
  const Streamed s = stream(reply);
  // The whole reply parsed at once (text/tool_calls.h), special tokens then left out.
  const ModelReply whole = parse_gemma4_reply(reply);
  ASSERT_EQ(s.calls.size(), whole.tool_calls.size());
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments.dump(), whole.tool_calls[0].arguments.dump());
  EXPECT_EQ(s.calls[0].arguments.dump(), R"({"city":"Paris, FR","days":3})");
  EXPECT_EQ(s.calls[1].name, "ping");
  EXPECT_EQ(s.text, "Let me check. Done.");
}

TEST(ToolCallStream, TextWithoutCallsIsTheSkipSpecialDecode) {
  const std::string reply = "Plain text, émojis 🙂 and a <|\"|> quote.<turn|>";
  const Streamed s = stream(reply);
  EXPECT_TRUE(s.calls.empty());
  EXPECT_EQ(s.text, gemma4().decode(gemma4().encode(reply), /*skip_special_tokens=*/true));
}

// What is not a whole call is shown as any text is: the skip-special decode of its ids.
TEST(ToolCallStream, BrokenOrUnclosedCallsStayText) {
  for (const std::string reply : {"A<|tool_call>not a call<tool_call|>B", "A<|tool_call>call:f{x:1"}) {
    const Streamed s = stream(reply);
    EXPECT_TRUE(s.calls.empty()) << reply;
    EXPECT_EQ(s.text, gemma4().decode(gemma4().encode(reply), /*skip_special_tokens=*/true)) << reply;
    EXPECT_NE(s.text.find("call"), std::string::npos) << reply;
  }
}

}  // namespace
}  // namespace staticlm
