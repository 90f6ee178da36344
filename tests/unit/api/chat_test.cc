// The public Chat (include/staticlm/chat.h) against `staticlm chat` on the tiny model: two turns
// through the API give the CLI's replies and per-turn statistics for the same stdin script, and
// the second turn prefills only its new tokens (the rest comes from the cache).
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "staticlm/model.h"
#include "test_util.h"
#include "tiny_model.h"

namespace staticlm {
namespace {

class ApiChat : public test::TinyModelTest {};

struct CliTurn {
  long prefilled, reused, generated, context;
  std::string stopped;
};

// The statistics lines `staticlm chat` writes to stderr, one per turn.
std::vector<CliTurn> cli_turns(const std::string& err) {
  static const std::regex re(
      R"(turn \d+: prefilled (\d+) tokens, reused (\d+) from the cache; generated (\d+) tokens \([^)]*\); stopped: ([^;]+); context (\d+)/)");
  std::vector<CliTurn> out;
  for (std::sregex_iterator it(err.begin(), err.end(), re), end; it != end; ++it) {
    out.push_back({std::stol((*it)[1]), std::stol((*it)[2]), std::stol((*it)[3]), std::stol((*it)[5]), (*it)[4]});
  }
  return out;
}

TEST_F(ApiChat, TwoTurnsMatchTheCliAndTheSecondPrefillsOnlyItsNewTokens) {
  const std::string script = dir_->file("two_turns.txt");
  std::ofstream(script, std::ios::binary) << "Hello there\nAnd again\n";
  // Through sh so that the script, not run_command's /dev/null, is the chat's stdin.
  const auto cli = test::run_command("sh -c \"" + std::string(STATICLM_BIN) + " chat -m " + model() +
                                     " --max-seq 256 -n 4 --temp 0 --system 'Be brief.' <" + script + "\"");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const std::vector<CliTurn> expected = cli_turns(cli.err);
  ASSERT_EQ(expected.size(), 2u) << cli.err;

  const api::Model m = api::Model::open(model());
  api::SessionOptions o;
  o.max_seq = 256;
  o.threads = 2;
  api::ChatOptions co;
  co.system = "Be brief.";
  const std::unique_ptr<api::Chat> chat = m.chat(o, co);
  api::GenerateParams p;
  p.max_new_tokens = 4;
  p.temperature = 0;
  std::string streamed;
  const auto stream = [&](std::int64_t, std::string_view text) {
    streamed += text;
    return true;
  };
  const api::TurnResult t1 = chat->say("Hello there", p, stream);
  EXPECT_EQ(streamed + t1.result.text_tail, t1.result.text);
  const api::TurnResult t2 = chat->say("And again", p);
  EXPECT_EQ(cli.out, t1.result.text + "\n" + t2.result.text + "\n");

  const api::TurnResult* turns[] = {&t1, &t2};
  for (int i = 0; i < 2; ++i) {
    const api::TurnResult& t = *turns[i];
    EXPECT_EQ(t.prefilled_tokens, expected[i].prefilled) << "turn " << i + 1;
    EXPECT_EQ(t.reused_tokens, expected[i].reused) << "turn " << i + 1;
    EXPECT_EQ(t.result.stats.generated_tokens, expected[i].generated) << "turn " << i + 1;
    EXPECT_EQ(t.context_tokens, expected[i].context) << "turn " << i + 1;
    EXPECT_EQ(t.result.stop_reason, expected[i].stopped) << "turn " << i + 1;
    EXPECT_EQ(t.dropped_turns, 0);
  }
  // The second turn reuses the whole first one but the reply's last sampled token (decoding
  // never fed it back), and prefills only that token and the new user turn.
  EXPECT_EQ(t1.reused_tokens, 0);
  EXPECT_EQ(t2.reused_tokens, t1.context_tokens - 1);
  EXPECT_EQ(t2.prefilled_tokens + t2.reused_tokens + t2.result.stats.generated_tokens, t2.context_tokens);
  const auto turn_ids = m.tokenizer()->encode("<|turn>user\nAnd again<turn|>\n<|turn>model\n");
  EXPECT_LE(t2.prefilled_tokens, static_cast<std::int64_t>(turn_ids.size()) + 3);  // + last token, <turn|>, "\n"
  EXPECT_EQ(chat->turns(), 2);
  EXPECT_EQ(chat->context_tokens(), t2.context_tokens);
  EXPECT_EQ(chat->past_len(), t2.context_tokens - 1);
}

TEST_F(ApiChat, AnImageNeedsVisionAndTheFirstTurn) {
  const api::Model m = api::Model::open(model());
  api::SessionOptions o;
  o.max_seq = 64;
  o.threads = 1;
  const auto chat = m.chat(o);
  api::GenerateParams p;
  p.max_new_tokens = 1;
  try {
    chat->say_with_image("Hi", test::fixture("images/gradient.png"), p);
    FAIL() << "an image without the vision graphs was taken";
  } catch (const api::Error& e) {
    EXPECT_EQ(e.code(), api::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ChatOptions::vision"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(chat->empty());
  // An unknown overflow policy is named.
  api::ChatOptions bad;
  bad.overflow = "wrap";
  EXPECT_THROW(m.chat(o, bad), api::Error);
}

}  // namespace
}  // namespace staticlm
