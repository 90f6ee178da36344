// The public Chat (include/staticlm/chat.h) against `staticlm chat` on the tiny model: two turns
// through the API give the CLI's replies and per-turn statistics for the same stdin script, and
// the second turn prefills only its new tokens (the rest comes from the cache). A vision chat laid
// out by the checkpoint's template keeps its image span in the cache and equals `run --messages`.
#include <gtest/gtest.h>

#include <array>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/logits_dump.h"
#include "staticlm/model.h"
#include "test_util.h"
#include "tiny_model.h"

namespace staticlm {
namespace {

class ApiChat : public test::TinyModelTest {
 protected:
  // Three greedy turns on a chat that meets `disturb` after its first and on one that never does,
  // in the built-in format and with the checkpoint's template: the disturbed chat still holds one
  // turn, and its second and third replies equal the other's (the second reusing the first turn
  // from the cache).
  static void expect_later_turns_unchanged_by(const std::function<void(api::Chat&, bool jinja)>& disturb, int threads = 1) {
    const api::Model m = api::Model::open(model());
    const api::SessionOptions o = session_options(160, threads);
    const api::GenerateParams p = greedy(5);
    const std::vector<std::string> turns = {"Hello there", "And again", "Once more"};
    for (const bool jinja : {false, true}) {
      SCOPED_TRACE(jinja ? "templated" : "built-in");
      api::ChatOptions co;
      co.jinja = jinja;
      const auto clean = m.chat(o, co), disturbed = m.chat(o, co);
      std::vector<std::vector<std::int64_t>> want;
      for (const std::string& t : turns) want.push_back(clean->say(t, p).result.tokens);
      EXPECT_EQ(disturbed->say(turns[0], p).result.tokens, want[0]);
      disturb(*disturbed, jinja);
      EXPECT_EQ(disturbed->turns(), 1);
      const api::TurnResult second = disturbed->say(turns[1], p);
      EXPECT_EQ(second.result.tokens, want[1]);
      EXPECT_GT(second.reused_tokens, 0);  // the first turn still comes from the cache
      EXPECT_EQ(disturbed->say(turns[2], p).result.tokens, want[2]);
    }
  }
};

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

// The image turn, then a text turn: the second reuses the whole first prompt, image span
// included, from the cache (the template renders the first turn the same again), and its reply
// equals greedy `run --messages` over the same three messages in one fresh prefill.
// `chat_template`: "" for the checkpoint's. Returns the second turn's reused tokens and the first's prefilled ones.
// `start`: where the template puts the image span. The second reply must equal `run --messages`;
// a chat saved after it and loaded into a new chat gives the third reply the first chat gives.
// Returns the second turn's reused tokens, the first's prefilled ones and the loaded third's reused ones.
struct VisionTurns {
  std::int64_t second_reused, first_prefilled, loaded_third_reused;
};
VisionTurns templated_vision_chat_equals_run(const std::string& model, test::TempDir& dir,
                                             const std::string& chat_template, int start) {
  const api::Model m = api::Model::open(model);
  api::SessionOptions o;
  o.max_seq = 512;
  o.threads = 2;
  const std::vector<std::string> sets = {"image_fit=fit", "vision_profile.visual_start_idx=" + std::to_string(start)};
  o.sets = sets;
  api::ChatOptions co;
  co.vision = true;
  co.jinja = true;
  co.chat_template = chat_template;
  const std::unique_ptr<api::Chat> chat = m.chat(o, co);
  api::GenerateParams p;
  p.max_new_tokens = 4;
  p.temperature = 0;
  // A copy of the image, which the saved chat names and a later load reads again.
  const std::string image = dir.file("vision_chat_image.png");
  std::filesystem::copy_file(test::fixture("images/gradient.png"), image, std::filesystem::copy_options::overwrite_existing);
  const api::TurnResult t1 = chat->say_with_image("Describe it.", image, p);
  const api::TurnResult t2 = chat->say("More please.", p);
  EXPECT_GT(t1.prefilled_tokens, 5 + 256);  // the image's soft tokens were prefilled
  EXPECT_EQ(t2.reused_tokens + t2.prefilled_tokens + t2.result.stats.generated_tokens, t2.context_tokens);
  EXPECT_EQ(chat->turns(), 2);

  std::vector<std::int64_t> reply = t1.result.tokens;
  if (!reply.empty() && (reply.back() == m.tokenizer()->token_to_id("<turn|>") || reply.back() == 1)) reply.pop_back();
  const nlohmann::ordered_json messages = {
      {{"role", "user"},
       {"content", {{{"type", "image"}, {"image", image}}, {{"type", "text"}, {"text", "Describe it."}}}}},
      {{"role", "assistant"}, {"content", m.tokenizer()->decode(reply)}},
      {{"role", "user"}, {"content", "More please."}}};
  const std::string file = dir.file("vision_messages.json"), dump = dir.file("vision_run.safetensors");
  std::ofstream(file, std::ios::binary) << messages.dump();
  std::string args = "run -m " + model + " --messages " + file + " -n 4 --temp 0 --max-seq 512 --set " + sets[0] +
                     " --set " + sets[1] + " --dump-logits " + dump;
  if (!chat_template.empty()) args += " --chat-template " + chat_template;
  const auto run = test::run_staticlm(args);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code == 0) {
    EXPECT_EQ(read_logits_dump(dump).tokens, t2.result.tokens);
  }

  const std::string saved = dir.file("vision_chat.safetensors");
  chat->save(saved);
  const api::TurnResult t3 = chat->say("Third one.", p);
  const std::unique_ptr<api::Chat> resumed = m.chat(o, co);
  resumed->load(saved);
  EXPECT_EQ(resumed->turns(), 2);
  const api::TurnResult r3 = resumed->say("Third one.", p);
  EXPECT_EQ(r3.result.tokens, t3.result.tokens);
  EXPECT_EQ(r3.reused_tokens, t3.reused_tokens);
  // Without its image file the saved chat is refused by name, the chat left as it was.
  std::filesystem::remove(image);
  const std::unique_ptr<api::Chat> blind = m.chat(o, co);
  try {
    blind->load(saved);
    ADD_FAILURE() << "a saved chat was loaded without its image";
  } catch (const api::Error& e) {
    EXPECT_NE(std::string(e.what()).find(saved + ": the saved chat's image: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(image), std::string::npos) << e.what();
  }
  EXPECT_TRUE(blind->empty());
  return {t2.reused_tokens, t1.prefilled_tokens, r3.reused_tokens};
}

TEST_F(ApiChat, TemplatedVisionChatReusesTheImageAndEqualsRun) {
  const VisionTurns own = templated_vision_chat_equals_run(model(), *dir_, "", 5);
  EXPECT_GE(own.second_reused, own.first_prefilled);
  EXPECT_GE(own.loaded_third_reused, own.first_prefilled);  // the loaded cache kept the image span
  // A template whose first line counts the messages changes the text before the image every
  // turn: the second turn lays the image out again in a full prefill, and still equals run.
  const std::string counted = dir_->file("counted_vision.jinja");
  std::ofstream(counted, std::ios::binary)
      << "{{ bos_token }}<|turn>system\n{{ messages | length }}<turn|>\n{% for m in messages %}<|turn>"
         "{{ 'model' if m.role == 'assistant' else m.role }}\n{% if m.content is string %}{{ m.content }}{% else %}"
         "{% for c in m.content %}{% if c.type == 'image' %}<|image|>{% else %}{{ c.text }}{% endif %}{% endfor %}"
         "{% endif %}<turn|>\n{% endfor %}{% if add_generation_prompt %}<|turn>model\n{% endif %}";
  const VisionTurns counting = templated_vision_chat_equals_run(model(), *dir_, counted, 11);
  EXPECT_EQ(counting.second_reused, 0);
  EXPECT_EQ(counting.loaded_third_reused, 0);
  EXPECT_GT(counting.first_prefilled, 11 + 256);
}

// A turn whose token callback throws (Python's KeyboardInterrupt in a stream, a writer whose
// client went away) is not recorded, and what its prefill put in the cache is not trusted: the
// turns after it equal those of a chat that never saw it, in the built-in format and templated.
TEST_F(ApiChat, AFailedTurnLeavesTheNextTurnsAsIfItNeverRan) {
  expect_later_turns_unchanged_by(
      [](api::Chat& chat, bool) {
        int seen = 0;
        const auto interrupt = [&](std::int64_t, std::string_view) -> bool {
          if (++seen == 3) throw std::runtime_error("interrupted");
          return true;
        };
        EXPECT_ANY_THROW(chat.say("A longer question, interrupted while its reply streams", greedy(5), interrupt));
        EXPECT_EQ(seen, 3);
      },
      2);
}

// A turn whose should_stop gives up its prompt part-way is not kept: no reply, the turns as before,
// the cache rewound to what the context still holds; the next turns equal a chat's that never saw it.
TEST_F(ApiChat, ATurnStoppedDuringItsPromptIsNotKept) {
  expect_later_turns_unchanged_by([](api::Chat& chat, bool jinja) {
    const std::int64_t context = chat.context_tokens(), past = chat.past_len();
    api::GenerateParams stop = greedy(5);
    int polls = 0;
    stop.should_stop = [&] { return ++polls == 2; };  // before the prompt's second layer
    const api::TurnResult given_up = chat.say("A longer question, given up while its prompt is prefilled", stop);
    EXPECT_EQ(polls, 2);
    EXPECT_TRUE(given_up.result.tokens.empty());
    EXPECT_EQ(given_up.result.stop_reason, "stopped by caller");
    EXPECT_EQ(given_up.context_tokens, chat.context_tokens());
    if (jinja) {
      // A template lays every turn out again: the cache keeps the prefix the layouts share.
      EXPECT_LT(chat.past_len(), past);
      EXPECT_EQ(chat.context_tokens(), chat.past_len());
    } else {
      EXPECT_EQ(chat.context_tokens(), context);
      EXPECT_EQ(chat.past_len(), past);
    }
  });
}

// A Chat (and a Session) serves one call at a time: a call into it from its own token callback
// is refused by name, and the turn that was running ends as it would have without it (the nested
// say ran a second turn over the cache: the context and the cache disagreed).
TEST_F(ApiChat, CallsFromTheTokenCallbackAreRefused) {
  const api::Model m = api::Model::open(model());
  api::SessionOptions o = session_options(160);
  api::GenerateParams p = greedy(5);
  const auto clean = m.chat(o), reentered = m.chat(o);
  const api::TurnResult want = clean->say("Hello there", p);
  std::vector<std::string> errors;
  const auto nest = [&](std::int64_t, std::string_view) {
    for (const auto& call : std::vector<std::function<void()>>{[&] { reentered->say("inner", p); }, [&] { reentered->reset(); },
                                                               [&] { reentered->save(dir_->file("x.chat")); }}) {
      try {
        call();
      } catch (const api::Error& e) {
        errors.push_back(e.what());
      }
    }
    return true;
  };
  const api::TurnResult got = reentered->say("Hello there", p, nest);
  EXPECT_EQ(got.result.tokens, want.result.tokens);
  ASSERT_EQ(errors.size(), 3u * want.result.tokens.size());
  for (const std::string& e : errors) EXPECT_NE(e.find("this chat is in a call already"), std::string::npos) << e;
  EXPECT_EQ(reentered->context_tokens(), clean->context_tokens());
  EXPECT_EQ(reentered->past_len(), clean->past_len());

  auto s = m.session(o);
  std::string session_error;
  const auto r = s->generate(api::Prompt{{2, 105, 2364}, "", {}}, p, [&](std::int64_t, std::string_view) {
    try {
      s->decode(2);
    } catch (const api::Error& e) {
      session_error = e.what();
    }
    return true;
  });
  EXPECT_EQ(r.tokens.size(), 5u);
  EXPECT_NE(session_error.find("this session is in a call already"), std::string::npos) << session_error;
}

// The getters answer the conversation as the last call left it, also from the token callback
// (or another thread) while a call changes it; then the new counts once the call ends.
TEST_F(ApiChat, GettersDuringACallAnswerTheCountsBeforeIt) {
  const api::Model m = api::Model::open(model());
  api::SessionOptions o = session_options(160);
  api::GenerateParams p = greedy(4);
  const auto chat = m.chat(o);
  chat->say("Hello there", p);
  const std::int64_t turns = chat->turns(), context = chat->context_tokens(), past = chat->past_len();
  ASSERT_EQ(turns, 1);
  ASSERT_GT(past, 0);
  std::vector<std::array<std::int64_t, 3>> seen;
  bool empty_seen = true;
  chat->say("And then?", p, [&](std::int64_t, std::string_view) {
    seen.push_back({chat->turns(), chat->context_tokens(), chat->past_len()});
    empty_seen = chat->empty();
    return true;
  });
  ASSERT_FALSE(seen.empty());
  for (const auto& s : seen) EXPECT_EQ(s, (std::array<std::int64_t, 3>{turns, context, past}));
  EXPECT_FALSE(empty_seen);
  EXPECT_EQ(chat->turns(), 2);
  EXPECT_GT(chat->context_tokens(), context);
  EXPECT_GT(chat->past_len(), past);

  auto s = m.session(o);
  std::vector<std::int64_t> session_seen;
  const auto r = s->generate(api::Prompt{{2, 105, 2364}, "", {}}, p, [&](std::int64_t, std::string_view) {
    session_seen.push_back(s->past_len());
    return true;
  });
  EXPECT_EQ(session_seen, std::vector<std::int64_t>(r.tokens.size(), 0));
  EXPECT_EQ(s->past_len(), 3 + static_cast<std::int64_t>(r.tokens.size()) - 1);
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
