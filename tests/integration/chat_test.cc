// `staticlm chat` end to end on the tiny model: a scripted 10-turn chat prefills only each
// turn's new tokens (the statistics say how many, and how many came from the cache); its last
// reply equals a one-shot `run` over the saved context; context_overflow=truncate keeps going
// past max_seq while error stops cleanly; a saved conversation is refused by a chat with
// another max_seq. A chat laid out by a Jinja template (--jinja / --chat-template) equals `run
// --messages` over the messages it saved, also with a template that rewrites earlier turns.
// Also: text-only `inputs` on the multimodal tiny model.
#include <gtest/gtest.h>

#include <algorithm>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/logits_dump.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

class Chat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --out " + dir_->file("m"));
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override { ASSERT_EQ(made_.exit_code, 0) << made_.err; }
  static std::string model() { return dir_->file("m"); }
  // Runs chat with `script` on stdin (a file: not a terminal).
  static test::CommandResult chat(const std::string& script, const std::string& args) {
    const std::string in = dir_->file("script.txt"), out = dir_->file("out.txt"), err = dir_->file("err.txt");
    write(in, script);
    const std::string cmd = std::string(STATICLM_BIN) + " chat -m " + model() + " " + args + " <" + in + " >" + out +
                            " 2>" + err;
    const int status = std::system(cmd.c_str());
    test::CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  static test::TempDir* dir_;
  static test::CommandResult made_;
};
test::TempDir* Chat::dir_ = nullptr;
test::CommandResult Chat::made_;

struct TurnLine {
  long prefilled, reused, generated, context;
};

std::vector<TurnLine> turn_lines(const std::string& err) {
  static const std::regex re(
      R"(turn \d+: prefilled (\d+) tokens, reused (\d+) from the cache(?:, dropped \d+ oldest turns)?; generated (\d+) tokens .*; context (\d+)/)");
  std::vector<TurnLine> out;
  for (std::sregex_iterator it(err.begin(), err.end(), re), end; it != end; ++it) {
    out.push_back({std::stol((*it)[1]), std::stol((*it)[2]), std::stol((*it)[3]), std::stol((*it)[4])});
  }
  return out;
}

std::string ten_turns() {
  std::string s;
  for (int i = 1; i <= 10; ++i) s += "Question number " + std::to_string(i) + " about the weather?\n";
  return s;
}

TEST_F(Chat, TenTurnsPrefillOnlyTheNewTokens) {
  const std::string saved = dir_->file("ten.safetensors");
  const auto r = chat(ten_turns() + "/stats\n/save " + saved + "\n", "--max-seq 1024 -n 6 --temp 0 --system 'Be brief.'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<TurnLine> t = turn_lines(r.err);
  ASSERT_EQ(t.size(), 10u) << r.err;
  EXPECT_EQ(t[0].reused, 0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    // The context is what was reused, prefilled and generated; nothing else.
    EXPECT_EQ(t[i].reused + t[i].prefilled + t[i].generated, t[i].context) << "turn " << i + 1;
    if (i == 0) continue;
    // Everything before the turn but the previous reply's last sampled token came from the cache.
    EXPECT_EQ(t[i].reused, t[i - 1].context - 1) << "turn " << i + 1;
    EXPECT_LT(t[i].prefilled, 40) << "turn " << i + 1 << " re-prefilled old turns";
  }
  EXPECT_NE(r.err.find("turns 10, context " + std::to_string(t[9].context) + " tokens"), std::string::npos) << r.err;

  // The last reply equals greedy `run` over the same context in one full prefill.
  const auto f = SafetensorsFile::open(saved);
  const TensorView tv = f->get("tokens");
  const auto* ids = static_cast<const std::int64_t*>(tv.data);
  const std::int64_t n = tv.numel(), prompt_len = n - t[9].generated;
  std::string csv;
  for (std::int64_t i = 0; i < prompt_len; ++i) csv += (i ? "," : "") + std::to_string(ids[i]);
  const std::string dump = dir_->file("last.safetensors");
  const auto run = test::run_staticlm("run -m " + model() + " --prompt-ids " + csv + " -n " +
                                      std::to_string(t[9].generated) + " --max-seq 1024 --temp 0 --dump-logits " + dump);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const LogitsDump d = read_logits_dump(dump);
  EXPECT_EQ(d.tokens, std::vector<std::int64_t>(ids + prompt_len, ids + n));
}

TEST_F(Chat, TruncateKeepsGoingPastMaxSeqWhileErrorStopsCleanly) {
  const auto trunc = chat(ten_turns(), "--max-seq 96 -n 6 --temp 0 --system 'Be brief.' --set context_overflow=truncate");
  ASSERT_EQ(trunc.exit_code, 0) << trunc.err;
  const std::vector<TurnLine> t = turn_lines(trunc.err);
  ASSERT_EQ(t.size(), 10u) << trunc.err;
  long total = 0;
  for (const TurnLine& x : t) total += x.prefilled + x.generated;
  EXPECT_GT(total, 96) << "the chat went past max_seq";
  EXPECT_NE(trunc.err.find("oldest turns"), std::string::npos) << trunc.err;
  for (const TurnLine& x : t) EXPECT_LE(x.context, 96);

  const auto err = chat(ten_turns(), "--max-seq 96 -n 6 --temp 0 --system 'Be brief.'");
  EXPECT_EQ(err.exit_code, 2) << err.err;
  // llama.cpp's spelling of --system: the same chat, the same stop.
  const auto spelled = chat(ten_turns(), "--max-seq 96 -n 6 --temp 0 --system-prompt 'Be brief.'");
  EXPECT_EQ(spelled.exit_code, 2);
  EXPECT_EQ(spelled.out, err.out);
  const std::vector<TurnLine> e = turn_lines(err.err);
  EXPECT_GE(e.size(), 1u);
  EXPECT_LT(e.size(), 10u);
  EXPECT_NE(err.err.find("error: chat: the next turn needs"), std::string::npos) << err.err;
  EXPECT_NE(err.err.find("context_overflow=error"), std::string::npos) << err.err;
}

TEST_F(Chat, SaveLoadRoundTripsAndRefusesAnotherProfile) {
  const std::string saved = dir_->file("two.safetensors");
  const auto a = chat("Hello there\nAnd again\n/save " + saved + "\n", "--max-seq 256 -n 4 --temp 0");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  // Loading and asking the same third question equals asking it in the original chat.
  const auto whole = chat("Hello there\nAnd again\nThird one\n", "--max-seq 256 -n 4 --temp 0");
  const auto resumed = chat("/load " + saved + "\nThird one\n", "--max-seq 256 -n 4 --temp 0");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const std::string last_whole = whole.out.substr(whole.out.rfind('\n', whole.out.size() - 2) + 1);
  EXPECT_EQ(resumed.out, last_whole);
  const std::vector<TurnLine> rt = turn_lines(resumed.err), wt = turn_lines(whole.err);
  ASSERT_EQ(rt.size(), 1u);
  ASSERT_EQ(wt.size(), 3u);
  EXPECT_EQ(rt[0].reused, wt[2].reused);
  EXPECT_EQ(rt[0].prefilled, wt[2].prefilled);

  // A file whose turn starts or tokens lie outside what it saved is refused at /load (a turn
  // start indexes the tokens when a later turn truncates).
  const auto corrupt = [&](const std::string& tensor, std::int64_t at, std::int64_t value, const std::string& name) {
    const auto f = SafetensorsFile::open(saved);
    SafetensorsWriter w;
    for (const auto& [k, v] : f->metadata()) w.add_metadata(k, v);
    std::vector<std::int64_t> changed;
    for (const std::string& n : f->names()) {
      const TensorView t = f->get(n);
      if (n != tensor) {
        w.add(n, t);
        continue;
      }
      const auto* p = static_cast<const std::int64_t*>(t.data);
      changed.assign(p, p + t.shape.numel());
      changed.at(static_cast<std::size_t>(at)) = value;
      w.add(n, TensorView{DType::kI64, t.shape, changed.data()});
    }
    const std::string path = dir_->file(name);
    w.write(path);
    return chat("/load " + path + "\nThird one\n", "--max-seq 256 -n 4 --temp 0 --set context_overflow=truncate");
  };
  const auto bad_start = corrupt("turn_starts", 1, 1000, "bad_start.safetensors");
  EXPECT_EQ(bad_start.exit_code, 2);
  EXPECT_NE(bad_start.err.find("turn_starts[1] = 1000 is outside ["), std::string::npos) << bad_start.err;
  const auto bad_token = corrupt("tokens", 3, 1000000000000, "bad_token.safetensors");
  EXPECT_EQ(bad_token.exit_code, 2);
  EXPECT_NE(bad_token.err.find("tokens[3] = 1000000000000 is outside the vocabulary"), std::string::npos) << bad_token.err;

  const auto other = chat("/load " + saved + "\n", "--max-seq 128 -n 4 --temp 0");
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("saved for checkpoint 'm'"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("max_seq 256"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("max_seq 128"), std::string::npos) << other.err;
}

TEST_F(Chat, BadCommandsAndFlags) {
  const auto cmd = chat("/frobnicate\n", "-n 2");
  EXPECT_EQ(cmd.exit_code, 2);
  EXPECT_NE(cmd.err.find("error: chat: unknown command '/frobnicate'"), std::string::npos) << cmd.err;
  const auto img = chat("/image nowhere.png\n", "-n 2");
  EXPECT_EQ(img.exit_code, 2);
  EXPECT_NE(img.err.find("start the chat with --image"), std::string::npos) << img.err;
  const auto utf8 = chat("hello\nab\xff\xfe\n", "-n 2");
  EXPECT_EQ(utf8.exit_code, 2);
  EXPECT_NE(utf8.err.find("error: stdin line 2: not valid UTF-8 (bad byte at offset 2)"), std::string::npos) << utf8.err;
  const auto huge = chat(std::string(9 << 20, 'a') + "\n", "-n 2");
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_NE(huge.err.find("error: stdin line 1: longer than 8388608 bytes (the limit)"), std::string::npos) << huge.err;
  const auto bare = chat("/save\n", "-n 2");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("error: chat: /save needs a file: /save F"), std::string::npos) << bare.err;
  const auto pol = chat("hi\n", "-n 2 --set context_overflow=drop");
  EXPECT_EQ(pol.exit_code, 2);
  EXPECT_NE(pol.err.find("context_overflow: 'drop' is not one of: error, truncate"), std::string::npos) << pol.err;
}

// llama-cli's conversation flags: -p is the first turn, answered before stdin is read (the same
// answer as run --chat), -st ends after one turn, -f takes the turn from a file (its last
// newline dropped); --in-prefix / --in-suffix / -mli are noted (the chat format lays out turns).
TEST_F(Chat, PromptFlagIsTheFirstTurnAndSingleTurnEndsTheChat) {
  const auto run = test::run_staticlm("run -m " + model() + " -p 'hello there' --chat --temp 0 -n 4 --no-perf");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto first = chat("", "-p 'hello there' --temp 0 -n 4 --no-perf");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, run.out);
  const auto two = chat("what next\nand then\n", "-p 'hello there' --temp 0 -n 4 --no-perf");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out.rfind(run.out, 0), 0u) << two.out;
  EXPECT_EQ(std::count(two.out.begin(), two.out.end(), '\n'), 3) << two.out;
  const auto single = chat("what next\nand then\n", "-p 'hello there' -st --temp 0 -n 4 --no-perf");
  EXPECT_EQ(single.out, run.out);
  const auto stdin_single = chat("hello there\nand then\n", "-st --temp 0 -n 4 --no-perf");
  EXPECT_EQ(stdin_single.out, run.out);
  write(dir_->file("turn.txt"), "hello there\n");
  EXPECT_EQ(chat("", "-f " + dir_->file("turn.txt") + " -st --temp 0 -n 4 --no-perf").out, run.out);
  const auto noted = chat("", "-p 'hello there' -st --temp 0 -n 4 --no-perf --in-prefix U: --in-suffix A: -mli");
  EXPECT_EQ(noted.out, run.out);
  for (const char* note : {"note: --in-prefix U: has no effect", "note: --in-suffix A: has no effect",
                           "note: --multiline-input has no effect"}) {
    EXPECT_NE(noted.err.find(note), std::string::npos) << note << " in " << noted.err;
  }
  // A first turn that starts with '/' is text, not a command (commands come from stdin).
  const auto slash = chat("", "-p '/etc/hosts: what is it?' -st --temp 0 -n 4 --no-perf");
  EXPECT_EQ(slash.exit_code, 0) << slash.err;
  EXPECT_EQ(std::count(slash.out.begin(), slash.out.end(), '\n'), 1) << slash.out;
  const auto both = chat("", "-p hi -f " + dir_->file("turn.txt") + " -n 2");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("error: chat: give one of -p/--prompt and -f/--file (the first turn)"), std::string::npos) << both.err;
  const auto bad = chat("", "-p 'ab\\xff' -n 2");  // llama.cpp's escapes: \xff is the byte
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("error: --prompt: not valid UTF-8"), std::string::npos) << bad.err;
}

// A saved chat's context tokens and, for a templated chat, its messages.
struct Saved {
  std::vector<std::int64_t> tokens;
  nlohmann::ordered_json messages;
};
Saved read_saved(const std::string& path) {
  const auto f = SafetensorsFile::open(path);
  const TensorView tv = f->get("tokens");
  const auto* ids = static_cast<const std::int64_t*>(tv.data);
  Saved s{{ids, ids + tv.numel()}, nullptr};
  if (const auto it = f->metadata().find("messages"); it != f->metadata().end()) {
    s.messages = nlohmann::ordered_json::parse(it->second);
  }
  return s;
}

// Three turns laid out by `template_args`; the third reply must equal greedy `run` over the
// messages the chat saved (system + two turns + the third question) with the same template: a
// fresh prefill of the whole rendering, against the chat's cache reuse. Returns the turns.
std::vector<TurnLine> three_templated_turns(const std::string& template_args, const std::string& tag,
                                            const std::function<test::CommandResult(const std::string&, const std::string&)>& chat,
                                            test::TempDir& dir) {
  const std::string saved = dir.file(tag + ".safetensors"), two = dir.file(tag + "_two.safetensors");
  const std::string args = "--max-seq 256 -n 4 --temp 0 --system 'Be brief.' " + template_args;
  const auto r = chat("Hello there\nAnd again\n/save " + two + "\nThird one\n/save " + saved + "\n", args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<TurnLine> t = turn_lines(r.err);
  EXPECT_EQ(t.size(), 3u) << r.err;
  if (t.size() != 3u) return t;
  const Saved s = read_saved(saved);
  EXPECT_EQ(s.messages.size(), 6u) << s.messages.dump();
  if (s.messages.size() != 6u) return t;
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(s.messages[i]["role"], i % 2 ? "assistant" : "user") << i;
  EXPECT_EQ(s.messages[4]["content"], "Third one");
  EXPECT_EQ(read_saved(two).messages.size(), 4u);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}});
  for (std::size_t i = 0; i < 5; ++i) messages.push_back(s.messages[i]);
  const std::string file = dir.file(tag + "_messages.json"), dump = dir.file(tag + "_run.safetensors");
  std::ofstream(file, std::ios::binary) << messages.dump();
  const auto run = test::run_staticlm("run -m " + dir.file("m") + " --messages " + file + " " + template_args +
                                      " -n 4 --max-seq 256 --temp 0 --dump-logits " + dump);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (run.exit_code != 0) return t;
  const std::vector<std::int64_t> reply(s.tokens.end() - t[2].generated, s.tokens.end());
  EXPECT_EQ(read_logits_dump(dump).tokens, reply) << tag;
  for (const TurnLine& x : t) EXPECT_EQ(x.reused + x.prefilled + x.generated, x.context) << tag;
  return t;
}

TEST_F(Chat, ATemplatedChatEqualsRunOverItsSavedMessages) {
  // --jinja: the checkpoint's template, whose earlier turns stay as rendered: later turns reuse
  // them from the cache.
  const std::vector<TurnLine> own = three_templated_turns("--jinja", "own", chat, *dir_);
  ASSERT_EQ(own.size(), 3u);
  EXPECT_GT(own[1].reused, 10);
  EXPECT_GT(own[2].reused, own[1].context - 8);
  // A template of our own that numbers the turns and opens with the message count: every turn
  // rewrites the start, so nothing past <bos> and the line's opening is reused, and the replies
  // still equal a fresh run's.
  const std::string counted = dir_->file("counted.jinja");
  write(counted,
        "{{ bos_token }}<|turn>system\n{{ messages | length }} messages<turn|>\n"
        "{% for m in messages %}<|turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
        "[{{ loop.index }}] {{ m.content }}<turn|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|turn>model\n{% endif %}");
  const std::vector<TurnLine> rewritten = three_templated_turns("--chat-template " + counted, "counted", chat, *dir_);
  // stderr says which template laid the turns out.
  EXPECT_NE(chat("", "--chat-template " + counted).err.find("chat template: " + counted + "\n"), std::string::npos);
  EXPECT_NE(chat("", "--jinja").err.find("chat template: " + model() + "/chat_template.jinja\n"), std::string::npos);
  ASSERT_EQ(rewritten.size(), 3u);
  EXPECT_LE(rewritten[1].reused, 4);
  EXPECT_LE(rewritten[2].reused, 4);
  // The template was the one given: its first turn is not the checkpoint's.
  EXPECT_NE(rewritten[0].prefilled, own[0].prefilled);
}

TEST_F(Chat, TemplatedChatTruncatesSavesAndRefusesByName) {
  const std::string kept = dir_->file("tpl_kept.safetensors");
  const auto trunc = chat(ten_turns() + "/save " + kept + "\n",
                          "--jinja --max-seq 96 -n 6 --temp 0 --system 'Be brief.' --set context_overflow=truncate");
  ASSERT_EQ(trunc.exit_code, 0) << trunc.err;
  const std::vector<TurnLine> t = turn_lines(trunc.err);
  ASSERT_EQ(t.size(), 10u) << trunc.err;
  EXPECT_NE(trunc.err.find("oldest turns"), std::string::npos) << trunc.err;
  for (const TurnLine& x : t) EXPECT_LE(x.context, 96);
  // Whole turns went, oldest first: the kept messages are the last questions with their replies.
  const Saved s = read_saved(kept);
  ASSERT_TRUE(s.messages.is_array());
  ASSERT_GE(s.messages.size(), 2u);
  EXPECT_LT(s.messages.size(), 20u);
  EXPECT_EQ(s.messages.size() % 2, 0u);
  const std::size_t first = 11 - s.messages.size() / 2;
  for (std::size_t i = 0; i < s.messages.size(); i += 2) {
    EXPECT_EQ(s.messages[i]["content"], "Question number " + std::to_string(first + i / 2) + " about the weather?");
    EXPECT_EQ(s.messages[i + 1]["role"], "assistant");
  }
  const auto full = chat(ten_turns(), "--jinja --max-seq 96 -n 6 --temp 0 --system 'Be brief.'");
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_NE(full.err.find("error: chat: the conversation lays out to "), std::string::npos) << full.err;
  EXPECT_NE(full.err.find("context_overflow=error"), std::string::npos) << full.err;

  // Saved and loaded: the third question gets the answer it gets in one chat.
  const std::string saved = dir_->file("tpl_two.safetensors"), plain = dir_->file("plain_two.safetensors");
  const std::string args = "--jinja --max-seq 256 -n 4 --temp 0";
  ASSERT_EQ(chat("Hello there\nAnd again\n/save " + saved + "\n", args).exit_code, 0);
  const auto whole = chat("Hello there\nAnd again\nThird one\n", args);
  const auto resumed = chat("/load " + saved + "\nThird one\n", args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(resumed.out, whole.out.substr(whole.out.rfind('\n', whole.out.size() - 2) + 1));
  EXPECT_NE(resumed.err.find(" tokens, 2 turns from "), std::string::npos) << resumed.err;

  // A file of the other layout is refused, naming it.
  ASSERT_EQ(chat("Hello there\n/save " + plain + "\n", "--max-seq 256 -n 4 --temp 0").exit_code, 0);
  const auto to_plain = chat("/load " + saved + "\n", "--max-seq 256 -n 4 --temp 0");
  EXPECT_EQ(to_plain.exit_code, 2);
  EXPECT_NE(to_plain.err.find(saved + ": saved by a chat with a chat template"), std::string::npos) << to_plain.err;
  const auto to_tpl = chat("/load " + plain + "\n", args);
  EXPECT_EQ(to_tpl.exit_code, 2);
  EXPECT_NE(to_tpl.err.find(plain + ": saved by a chat in the built-in format"), std::string::npos) << to_tpl.err;

  // --var without a template, a --var that is not JSON and a missing template: catalogue rows
  // (bad_input_catalogue_test.cc).
  // A checkpoint without a template: --jinja is refused (render_chat would fall back silently).
  const std::string bare = dir_->file("bare");
  std::filesystem::create_directory(bare);
  for (const auto& e : std::filesystem::directory_iterator(model())) {
    if (e.path().filename() != "chat_template.jinja") std::filesystem::create_symlink(e.path(), bare + "/" + e.path().filename().string());
  }
  const auto none = test::run_staticlm("chat -m " + bare + " --jinja -n 2");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("has no chat template"), std::string::npos) << none.err;
}

// The tiny preset is multimodal and its registered profile's image span [1, 265) does not fit
// max_seq 64: a text-only prompt is laid out without it.
// A reply's thought (here forced by a grammar: a thought channel, then "Hi") goes to stderr as
// "[thinking] Hmm." and the answer alone to stdout; --reasoning-format none prints the reply
// as the model wrote it, markers and all; an unknown format is refused.
TEST_F(Chat, ThoughtsGoToStderrApartFromTheAnswer) {
  const std::string grammar = "--grammar 'root ::= <|channel> \"thought\\nHmm.\" <channel|> \"Hi\"' -n 20 --no-perf";
  const test::CommandResult apart = chat("hello\nagain\n", grammar);
  ASSERT_EQ(apart.exit_code, 0) << apart.err;
  EXPECT_EQ(apart.out, "Hi\nHi\n");
  EXPECT_NE(apart.err.find("[thinking] Hmm.\n[thinking] Hmm.\n"), std::string::npos) << apart.err;
  const test::CommandResult raw = chat("hello\n", grammar + " --reasoning-format none");
  ASSERT_EQ(raw.exit_code, 0) << raw.err;
  EXPECT_EQ(raw.out, "<|channel>thought\nHmm.<channel|>Hi\n");
  EXPECT_EQ(raw.err.find("[thinking]"), std::string::npos) << raw.err;
  EXPECT_EQ(chat("hello\n", "--reasoning-format hidden").exit_code, 2);
}

TEST_F(Chat, TextOnlyInputsOnAMultimodalCheckpoint) {
  const std::string out = dir_->file("hello.safetensors");
  const auto r = test::run_staticlm("inputs -m " + model() + " --prompt Hello --max-seq 64 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = SafetensorsFile::open(out);
  EXPECT_EQ(f->get("llm_input_ids").shape, (Shape{1, 64}));
  EXPECT_FALSE(f->contains("pixel_values"));
}

}  // namespace
}  // namespace staticlm
