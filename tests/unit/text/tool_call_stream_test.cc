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

// A thought channel (Gemma 4's thinking) is reasoning, not text, with take_reasoning: its name
// line left out, handed out while it streams, closed or not; tool calls after it are taken as
// before. Without take_reasoning the text is the skip-special decode, as before.
TEST(ToolCallStream, ThoughtChannelIsReasoning) {
  const Tokenizer& tok = gemma4();
  ASSERT_EQ(tok.encode("<|channel>").size(), 1u);
  ASSERT_EQ(tok.encode("<channel|>").size(), 1u);
  struct Case {
    std::string reply, text, reasoning;
    std::size_t calls = 0;
  };
  const std::vector<Case> cases = {
      {"<|channel>thought\nTwo and two: four, surely.<channel|>It is 4.<turn|>", "It is 4.", "Two and two: four, surely."},
      {"Well <|channel>thought\nhm<channel|> then.", "Well  then.", "hm"},
      {"<|channel>plan: ask<channel|>Ok", "Ok", "plan: ask"},            // another channel name stays
      {"<|channel>thought\n<channel|>Ok", "Ok", ""},                      // an empty thought
      {"<|channel>thought\nstill thinking", "", "still thinking"},      // the reply ran out inside it
      {"<|channel>thought\ncall it<channel|><|tool_call>call:ping{}<tool_call|>", "", "call it", 1},
      // a call inside a thought is part of the thought
      {"<|channel>thought\nno <|tool_call>call:ping{}<tool_call|> here<channel|>A", "A", "no <|tool_call>call:ping{}<tool_call|> here"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reply);
    ToolCallStream s(tok, true, /*take_reasoning=*/true);
    std::string text, reasoning;
    std::size_t pieces = 0;  // reasoning handed out before the reply ended
    for (const int id : tok.encode(c.reply)) {
      text += s.push(id);
      const std::string r = s.take_reasoning();
      pieces += !r.empty();
      reasoning += r;
    }
    EXPECT_FALSE(s.in_thought() && c.reply.find("<channel|>") != std::string::npos);
    text += s.finish();
    reasoning += s.take_reasoning();
    EXPECT_EQ(text, c.text);
    EXPECT_EQ(reasoning, c.reasoning);
    // The whole text parsed at once (run --json, parse_tool_calls) finds the same reasoning.
    const ModelReply whole = parse_gemma4_reply(c.reply);
    EXPECT_EQ(whole.reasoning, c.reasoning);
    EXPECT_EQ(whole.tool_calls.size(), s.calls().size());
    if (c.reasoning.size() > 4) {
      EXPECT_GE(pieces, 2u);  // streamed, not held to the end
    }
    EXPECT_EQ(s.calls().size(), c.calls);

    ToolCallStream plain(tok);
    std::string shown;
    for (const int id : tok.encode(c.reply)) shown += plain.push(id);
    shown += plain.finish();
    EXPECT_EQ(plain.take_reasoning(), "");
    if (plain.calls().empty()) {
      EXPECT_EQ(shown, tok.decode(tok.encode(c.reply), /*skip_special_tokens=*/true));
    }
  }
}

}  // namespace
}  // namespace staticlm
