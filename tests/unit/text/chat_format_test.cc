// The Gemma 4 chat format against spec/gemma4.md §5.5 and the E2B template it describes; the
// expected prompts are written out by hand from the spec.
#include <gtest/gtest.h>

#include "base/error.h"
#include "text/chat_format.h"
#include "text_test_util.h"

namespace staticlm {
namespace {

std::string render(const std::string& json, ChatOptions options = {}) {
  const auto messages = parse_chat_messages_json(json, "m.json");
  return render_gemma4_chat(messages, options).text;
}

void expect_invalid(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << "message: " << e.what() << "\nexpected: " << message;
  }
}

TEST(ChatFormat, SpecExampleByteForByte) {
  // spec §5.5: <bos><|turn>user\nWrite a poem about Machine Learning.<turn|>\n<|turn>model\n
  const std::string want = "<bos><|turn>user\nWrite a poem about Machine Learning.<turn|>\n<|turn>model\n";
  EXPECT_EQ(render(R"([{"role": "user", "content": "Write a poem about Machine Learning."}])"), want);
  EXPECT_EQ(render_gemma4_chat(chat_from_prompt("Write a poem about Machine Learning.", {}, "")).text, want);
}

TEST(ChatFormat, MatchesTheShippedJinjaTemplate) {
  // Prompts that Jinja2 rendered from the chat_template.jinja make-model ships, with Hugging
  // Face's settings (tools/chat_format_reference.py).
  const nlohmann::json cases = nlohmann::json::parse(read_file(test::fixture("text/chat_format_cases.json")));
  ASSERT_GE(cases.size(), 10u);
  for (const auto& c : cases) {
    ChatOptions options;
    options.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    options.enable_thinking = c["enable_thinking"].get<bool>();
    EXPECT_EQ(render(c["messages"].dump(), options), c["prompt"].get<std::string>()) << c["messages"].dump();
  }
}

TEST(ChatFormat, SystemPromptAndTrimming) {
  EXPECT_EQ(render(R"([{"role": "system", "content": "  You are a helpful assistant.\n"},
                       {"role": "user", "content": "\tHi!  "}])"),
            "<bos><|turn>system\nYou are a helpful assistant.<turn|>\n<|turn>user\nHi!<turn|>\n<|turn>model\n");
  // "developer" is a system turn too; a system turn given as parts joins its texts with spaces.
  EXPECT_EQ(render(R"([{"role": "developer", "content": [{"type": "text", "text": " Be brief. "}, {"type": "text", "text": "Be kind."}]},
                       {"role": "user", "content": "Hi"}])"),
            "<bos><|turn>system\nBe brief. Be kind.<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
}

TEST(ChatFormat, MultiTurnDropsThinkingFromModelTurns) {
  EXPECT_EQ(render(R"([{"role": "user", "content": "What is 2+2?"},
                       {"role": "assistant", "content": "<|channel>thought\nadd them<channel|>4"},
                       {"role": "user", "content": "And 3+3?"}])"),
            "<bos><|turn>user\nWhat is 2+2?<turn|>\n<|turn>model\n4<turn|>\n<|turn>user\nAnd 3+3?<turn|>\n<|turn>model\n");
  ChatOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(render(R"([{"role": "user", "content": "Hi"}, {"role": "model", "content": " Hello. "}])", no_prompt),
            "<bos><|turn>user\nHi<turn|>\n<|turn>model\nHello.<turn|>\n");
}

TEST(ChatFormat, ImagesAndOtherMedia) {
  const ChatPrompt p = render_gemma4_chat(parse_chat_messages_json(
      R"({"messages": [{"role": "system", "content": "You are a helpful assistant."},
          {"role": "user", "content": [{"type": "image", "image": "cow_beach_1.png"},
                                       {"type": "text", "text": "What is shown in this image?"}]}]})",
      "m.json"));
  EXPECT_EQ(p.text,
            "<bos><|turn>system\nYou are a helpful assistant.<turn|>\n<|turn>user\n<|image|>What is shown in this image?<turn|>\n"
            "<|turn>model\n");
  EXPECT_EQ(p.images, std::vector<std::string>{"cow_beach_1.png"});
  // OpenAI image_url parts, audio and video; several images keep their order.
  const ChatPrompt q = render_gemma4_chat(parse_chat_messages_json(
      R"([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "a.png"}}, {"type": "text", "text": "and"},
          {"type": "image", "url": "b.jpg"}, {"type": "input_audio", "input_audio": {"data": "..."}}, {"type": "video", "video": "c.mp4"}]}])",
      "m.json"));
  EXPECT_EQ(q.text, "<bos><|turn>user\n<|image|>and<|image|><|audio|><|video|><turn|>\n<|turn>model\n");
  EXPECT_EQ(q.images, (std::vector<std::string>{"a.png", "b.jpg"}));
  EXPECT_EQ(q.videos, std::vector<std::string>{"c.mp4"});
  // From the CLI's flags: images go before the text.
  EXPECT_EQ(render_gemma4_chat(chat_from_prompt("Compare.", {"x.png", "y.png"}, "Be exact.")).text,
            "<bos><|turn>system\nBe exact.<turn|>\n<|turn>user\n<|image|><|image|>Compare.<turn|>\n<|turn>model\n");
}

TEST(ChatFormat, Thinking) {
  ChatOptions thinking;
  thinking.enable_thinking = true;
  // <|think|> opens the system turn, which exists even without a system message.
  EXPECT_EQ(render(R"([{"role": "user", "content": "Why?"}])", thinking),
            "<bos><|turn>system\n<|think|><turn|>\n<|turn>user\nWhy?<turn|>\n<|turn>model\n");
  EXPECT_EQ(render(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}])", thinking),
            "<bos><|turn>system\n<|think|>Be brief.<turn|>\n<|turn>user\nWhy?<turn|>\n<|turn>model\n");
}

TEST(ChatFormat, WrongRoleOrderAndBadMessages) {
  expect_invalid([] { render(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"); },
                 "messages[1]: a user message follows a user message; turns must alternate user and assistant");
  expect_invalid([] { render(R"([{"role": "assistant", "content": "a"}])"); },
                 "messages[0]: a assistant message follows a system message or nothing");
  expect_invalid([] { render(R"([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}])"); },
                 "messages[1]: a system message can only come first");
  expect_invalid([] { render(R"([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])"); },
                 "the last message is not a user message");
  expect_invalid([] { render("[]"); }, "there are no messages");
  expect_invalid([] { render(R"([{"role": "tool", "content": "x"}])"); },
                 "m.json: messages[0].role: \"tool\" is not supported (expected system, developer, user or assistant)");
  expect_invalid([] { render(R"([{"role": "user", "content": [{"type": "file", "file": "x"}]}])"); },
                 "m.json: messages[0].content[0].type: unknown part type \"file\" (expected text, image, image_url, audio, input_audio or video)");
  expect_invalid([] { render(R"([{"role": "user", "content": [{"text": "x"}]}])"); }, "messages[0].content[0]: missing \"type\"");
  expect_invalid([] { render(R"([{"role": "user", "content": [{"type": "text"}]}])"); },
                 "messages[0].content[0]: a text part needs \"text\"");
  expect_invalid([] { render(R"([{"role": "user", "content": 5}])"); }, "messages[0].content: expected a string, null or a list of parts");
  expect_invalid([] { render(R"([{"content": "x"}])"); }, "messages[0]: missing \"role\"");
  expect_invalid([] { render(R"({"role": "user"})"); }, "m.json: expected a JSON array of messages");
  expect_invalid([] { render("[{"); }, "m.json: not valid JSON");
  expect_invalid([] { render(R"([{"role": "system", "content": [{"type": "image"}]}, {"role": "user", "content": "x"}])"); },
                 "messages[0].content[0]: a system message holds text only");
}

TEST(ChatFormat, PromptTokenizesToTheTurnTokens) {
  STATICLM_REQUIRE_GEMMA3(tok);
  // With the Gemma 3 vocabulary the Gemma 4 turn markers are ordinary text, but <bos> and the
  // three newlines must still come out as their own tokens.
  const std::vector<int> ids = tok->encode(render(R"([{"role": "user", "content": "Hi"}])"));
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 107), 3);
}

}  // namespace
}  // namespace staticlm
