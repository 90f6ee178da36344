// `staticlm run` end to end on the tiny model made by `staticlm make-model`: greedy generation
// streams tokens that match the logits it dumps, the static shape (max_seq) and the RoPE sine
// convention do not change the numbers, a full cache stops cleanly, sampling respects its
// filters, bad input gets a one-line error, and (when a golden file from tools/hf_golden.py
// exists) the logits match Hugging Face's.
#include <gtest/gtest.h>

#include <fstream>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "backends/cpu/kernels/dispatch.h"
#include "base/file.h"
#include "runtime/logits_dump.h"
#include "text/tokenizer.h"
#include "tensor/safetensors.h"
#include "test_util.h"

namespace staticlm {
namespace {

namespace fs = std::filesystem;

// 20 prompt tokens: longer than the tiny model's sliding window (16).
const std::string kPrompt = "2,105,2364,107,818,563,496,1607,2950,1003,529,496,23613,236761,106,107,105,4368,107,1437";

class Generate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (test::gemma3_tokenizer_path().empty()) return;
    dir_ = new test::TempDir();
    made_ = test::run_staticlm("make-model --preset tiny --seed 1 --out " + dir_->file("m"));
  }
  static void TearDownTestSuite() { delete dir_; }
  void SetUp() override {
    if (!dir_) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched: run scripts/setup.sh";
    ASSERT_EQ(made_.exit_code, 0) << made_.err;
  }
  static std::string model() { return dir_->file("m"); }
  static std::string file(const std::string& name) { return dir_->file(name); }

  // Runs `staticlm run` on the tiny model with a dump; asserts success.
  static LogitsDump run_dump(const std::string& args, const std::string& name, test::CommandResult* out = nullptr) {
    const std::string dump = file(name + ".safetensors");
    const auto r = test::run_staticlm("run -m " + model() + " " + args + " --dump-logits " + dump);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (out) *out = r;
    return read_logits_dump(dump);
  }
  static test::TempDir* dir_;
  static test::CommandResult made_;
};
test::TempDir* Generate::dir_ = nullptr;
test::CommandResult Generate::made_;

std::vector<std::int64_t> parse_stdout_ids(const std::string& out) {
  std::istringstream in(out);
  std::vector<std::int64_t> ids;
  for (std::int64_t v; in >> v;) ids.push_back(v);
  return ids;
}

std::int64_t argmax(std::span<const float> l) { return std::max_element(l.begin(), l.end()) - l.begin(); }

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// The text a checkpoint's tokens decode to (control tokens left out), as `run` prints it.
std::string decoded(const std::string& model_dir, const std::vector<std::int64_t>& tokens) {
  const auto tok = Tokenizer::load(model_dir + "/tokenizer.json");
  const std::vector<int> ids(tokens.begin(), tokens.end());
  return tok->decode(ids, /*skip_special_tokens=*/true);
}

TEST_F(Generate, GreedyTokensFollowTheDumpedLogits) {
  test::CommandResult r;
  const LogitsDump d = run_dump("--prompt-ids " + kPrompt + " -n 6 --max-seq 64 --temp 0", "greedy", &r);
  ASSERT_FALSE(d.tokens.empty());
  EXPECT_EQ(r.out, decoded(model(), d.tokens) + "\n");  // the streamed text
  ASSERT_EQ(d.prefill_logits.size(), 262144u);
  EXPECT_EQ(argmax(d.prefill_logits), d.tokens[0]);
  for (std::size_t j = 0; j + 1 < d.tokens.size(); ++j) {
    EXPECT_EQ(argmax(std::span(d.decode_logits).subspan(j * 262144, 262144)), d.tokens[j + 1]) << "step " << j;
  }
  for (float v : d.prefill_logits) ASSERT_LE(std::abs(v), 30.0f);  // final_logit_softcapping 30
  EXPECT_NE(r.err.find("prefill: 20 tokens in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decode: "), std::string::npos);
  EXPECT_NE(r.err.find("time to first token: "), std::string::npos);
}

// The same prompt under max_seq 64, 128 and 512, and with either RoPE sine convention.
TEST_F(Generate, MaxSeqAndRopeConventionDoNotChangeLogits) {
  const std::string base = "--prompt-ids " + kPrompt + " -n 4 --temp 0";
  const LogitsDump a = run_dump(base + " --max-seq 64", "s64");
  const LogitsDump b = run_dump(base + " --max-seq 128", "s128");
  const LogitsDump c = run_dump(base + " --max-seq 512", "s512");
  const LogitsDump h = run_dump(base + " --max-seq 64 --set rope_sine=hf", "hf");
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokens, c.tokens);
  EXPECT_LT(max_abs_diff(a.prefill_logits, b.prefill_logits), 1e-5f);
  EXPECT_LT(max_abs_diff(a.prefill_logits, c.prefill_logits), 1e-5f);
  EXPECT_LT(max_abs_diff(a.decode_logits, b.decode_logits), 1e-5f);
  EXPECT_LT(max_abs_diff(a.decode_logits, c.decode_logits), 1e-5f);
  EXPECT_EQ(a.prefill_logits, h.prefill_logits);
  EXPECT_EQ(a.decode_logits, h.decode_logits);
}

// max_seq 8 with a 5-token prompt: two fed tokens fill the cache; the third generated token
// ends the run cleanly with the documented message.
TEST_F(Generate, FullCacheStopsCleanly) {
  test::CommandResult r;
  const LogitsDump d = run_dump("--prompt-ids 2,105,2364,107,818 -n 50 --max-seq 8 --temp 0", "full", &r);
  EXPECT_EQ(d.tokens.size(), 3u);
  EXPECT_EQ(r.out, decoded(model(), d.tokens) + "\n");
  EXPECT_NE(r.err.find("stopped: cache full (the KV cache is full: max_seq 8 holds 7 tokens (prompt 5 + 2 fed "
                       "back); raise max_seq to generate more)"),
            std::string::npos)
      << r.err;
  // llama.cpp's -n -1: no limit but the cache; the same run.
  test::CommandResult u;
  EXPECT_EQ(run_dump("--prompt-ids 2,105,2364,107,818 -n -1 --max-seq 8 --temp 0", "unlimited", &u).tokens, d.tokens);
  EXPECT_EQ(u.out, r.out);
  EXPECT_NE(u.err.find("stopped: cache full"), std::string::npos) << u.err;
  // -2, llama.cpp's "until the context is filled", is the same here.
  test::CommandResult filled;
  EXPECT_EQ(run_dump("--prompt-ids 2,105,2364,107,818 -n -2 --max-seq 8 --temp 0", "filled", &filled).tokens, d.tokens);
  const auto bad = test::run_staticlm("run -m " + model() + " --prompt-ids 2,105 -n -3 --max-seq 8");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "error: -n -3: must be at least 1 (-1 or -2: until the cache is full)\n");
}

// Sampled tokens always come from the top-k of their own logits; a seed makes runs repeat.
TEST_F(Generate, SamplingRespectsTopKAndSeed) {
  const std::string args = "--prompt-ids " + kPrompt + " -n 6 --max-seq 64 --temp 1.5 --top-k 3 --seed 7";
  const LogitsDump a = run_dump(args, "k3a");
  const LogitsDump b = run_dump(args, "k3b");
  EXPECT_EQ(a.tokens, b.tokens);
  auto in_top3 = [](std::span<const float> l, std::int64_t t) {
    return std::count_if(l.begin(), l.end(), [&](float v) { return v > l[static_cast<std::size_t>(t)]; }) < 3;
  };
  EXPECT_TRUE(in_top3(a.prefill_logits, a.tokens[0]));
  for (std::size_t j = 0; j + 1 < a.tokens.size(); ++j) {
    EXPECT_TRUE(in_top3(std::span(a.decode_logits).subspan(j * 262144, 262144), a.tokens[j + 1])) << j;
  }
}

// llama.cpp's spellings: -f FILE (the prompt), -s (seed), -t (threads), -c / --ctx-size (max_seq),
// --repeat-penalty; the same sampled tokens as the long names.
TEST_F(Generate, LlamaCppFlagSpellingsMatchTheLongNames) {
  // As llama.cpp's -f, the file's last newline is not part of the prompt.
  std::ofstream(file("prompt.txt"), std::ios::binary) << "The capital of France\n";
  const std::string sampling = " -n 6 --temp 1.2 --top-k 20";
  const LogitsDump a = run_dump("-p 'The capital of France' --seed 5 --threads 1 --max-seq 48 --repetition-penalty 1.4" + sampling, "long");
  // --no-mmap copies the weights decode streams (the same bits); --mmap is the default.
  const LogitsDump b = run_dump("-f " + file("prompt.txt") + " -s 5 -t 1 -c 48 --repeat-penalty 1.4 --no-mmap" + sampling, "short");
  const LogitsDump c = run_dump("-f " + file("prompt.txt") + " -s 5 -t 1 --ctx-size 48 --repeat-penalty 1.4 --mmap" + sampling, "ctx");
  const LogitsDump p = run_dump("-f " + file("prompt.txt") + " -s 5 -t 1 -c 48 --repeat-penalty 1.4 --n-predict 6 --temp 1.2 --top-k 20",
                                "n_predict");
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.tokens, c.tokens);
  EXPECT_EQ(a.tokens, p.tokens);
  EXPECT_EQ(a.prefill_logits, b.prefill_logits);
  EXPECT_EQ(a.prefill_logits, c.prefill_logits);
  // Another seed samples another reply (6 draws at temperature 1.2 from a random model).
  const LogitsDump d = run_dump("-f " + file("prompt.txt") + " -s 6 -t 1 -c 48 --repeat-penalty 1.4" + sampling, "seed6");
  EXPECT_NE(a.tokens, d.tokens);
  // -s -1, llama.cpp's "a random seed": the seed drawn is printed, and giving it back repeats
  // the reply.
  test::CommandResult r;
  const LogitsDump e = run_dump("-f " + file("prompt.txt") + " -s -1 -c 48" + sampling, "random", &r);
  const std::string said = "seed: ";
  const auto at = r.err.find(said);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string seed = r.err.substr(at + said.size(), r.err.find(' ', at + said.size()) - at - said.size());
  const LogitsDump f = run_dump("-f " + file("prompt.txt") + " -s " + seed + " -c 48" + sampling, "again");
  EXPECT_EQ(e.tokens, f.tokens) << seed;
}

// -p with --chat tokenizes exactly what `chat-format --ids` gives; --messages the same.
TEST_F(Generate, TextPromptsUseTheChatFormat) {
  const auto ids = test::run_staticlm("chat-format -m " + model() + " --prompt 'Hello there' --ids");
  ASSERT_EQ(ids.exit_code, 0) << ids.err;
  std::string csv = ids.out.substr(0, ids.out.find('\n'));
  std::replace(csv.begin(), csv.end(), ' ', ',');
  test::CommandResult r;
  const LogitsDump chat = run_dump("-p 'Hello there' --chat -n 3 --max-seq 32 --temp 0", "chat", &r);
  const LogitsDump by_ids = run_dump("--prompt-ids " + csv + " -n 3 --max-seq 32 --temp 0", "chat_ids");
  EXPECT_EQ(chat.tokens, by_ids.tokens);
  EXPECT_EQ(chat.prefill_logits, by_ids.prefill_logits);
  const std::size_t n = static_cast<std::size_t>(std::count(csv.begin(), csv.end(), ',') + 1);
  EXPECT_NE(r.err.find("prefill: " + std::to_string(n) + " tokens"), std::string::npos) << r.err;
  write_text_atomic(file("messages.json"), R"([{"role": "user", "content": "Hello there"}])");
  const LogitsDump messages = run_dump("--messages " + file("messages.json") + " -n 3 --max-seq 32 --temp 0", "msg");
  EXPECT_EQ(messages.prefill_logits, by_ids.prefill_logits);
  // Without --chat the prompt is tokenized as given: no <bos>, no turn markers.
  const LogitsDump plain = run_dump("-p 'Hello there' -n 1 --max-seq 32 --temp 0", "plain", &r);
  EXPECT_NE(r.err.find("prefill: 2 tokens"), std::string::npos) << r.err;
  // llama.cpp's -sys: a system message before the prompt, in the chat format, as a messages file has it.
  write_text_atomic(file("system.json"), R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}])");
  const LogitsDump with_file = run_dump("--messages " + file("system.json") + " -n 3 --max-seq 48 --temp 0", "sys_msg");
  write_text_atomic(file("system.txt"), "Be brief.\n");
  for (const std::string& flag : std::vector<std::string>{"-sys 'Be brief.'", "--system-prompt 'Be brief.'",
                                                         "-sysf " + file("system.txt"), "--system-prompt-file " + file("system.txt")}) {
    const LogitsDump with_flag = run_dump("-p 'Hello there' " + flag + " -n 3 --max-seq 48 --temp 0", "sys_flag");
    EXPECT_EQ(with_flag.tokens, with_file.tokens) << flag;
    EXPECT_EQ(with_flag.prefill_logits, with_file.prefill_logits) << flag;
  }
  EXPECT_NE(with_file.prefill_logits, messages.prefill_logits);  // the system turn is in the prompt
  // -sysf's text is read as written: llama.cpp's escapes apply to command-line text only.
  write_text_atomic(file("system_bs.txt"), "Be brief.\\t\n");
  write_text_atomic(file("system_bs.json"), R"([{"role": "system", "content": "Be brief.\\t"}, {"role": "user", "content": "Hello there"}])");
  EXPECT_EQ(run_dump("-p 'Hello there' -sysf " + file("system_bs.txt") + " -n 3 --max-seq 48 --temp 0", "sysf_bs").prefill_logits,
            run_dump("--messages " + file("system_bs.json") + " -n 3 --max-seq 48 --temp 0", "msg_bs").prefill_logits);
  const auto both_system = test::run_staticlm("run -m " + model() + " -p hi -sys x -sysf " + file("system.txt") + " -n 1");
  EXPECT_EQ(both_system.exit_code, 2);
  EXPECT_EQ(both_system.err, "error: run: give one of --system-prompt and --system-prompt-file\n");
  const auto refused = test::run_staticlm("run -m " + model() + " --messages " + file("system.json") + " -sys x -n 1");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(refused.err, "error: run: --system-prompt goes with -p or -f (a --messages file holds its own system message)\n");
}

// A stop string ends generation at the token that completes it (that token is kept).
TEST_F(Generate, StopStringEndsGeneration) {
  const LogitsDump full = run_dump("--prompt-ids " + kPrompt + " -n 8 --max-seq 64 --temp 0", "nostop");
  const auto tok = Tokenizer::load(model() + "/tokenizer.json");
  // The first token (after the first) whose text is new: stopping on it must end there.
  std::size_t j = 1;
  std::string before = tok->decode(std::vector<int>{static_cast<int>(full.tokens[0])});
  std::string piece;
  for (; j < full.tokens.size(); ++j) {
    piece = tok->decode(std::vector<int>{static_cast<int>(full.tokens[j])});
    if (!piece.empty() && piece.find('\'') == std::string::npos && before.find(piece) == std::string::npos) break;
    before += piece;
  }
  if (j == full.tokens.size()) GTEST_SKIP() << "no usable stop piece in this output";
  test::CommandResult r;
  const LogitsDump d =
      run_dump("--prompt-ids " + kPrompt + " -n 8 --max-seq 64 --temp 0 --stop '" + piece + "'", "stop", &r);
  EXPECT_EQ(d.tokens, std::vector<std::int64_t>(full.tokens.begin(), full.tokens.begin() + j + 1));
  EXPECT_NE(r.err.find("stopped: stop string"), std::string::npos) << r.err;
}

// A checkpoint with neither generation_config.json nor tokenizer files (the tiny model's
// config.json and weights, linked) runs from --prompt-ids, greedy by default, with the EOS ids
// of config.json, printing token ids.
TEST_F(Generate, BareCheckpointRuns) {
  const std::string bare = file("bare");
  fs::create_directories(bare);
  for (const char* f : {"config.json", "model.safetensors"}) fs::create_hard_link(model() + "/" + f, bare + "/" + f);
  const auto r = test::run_staticlm("run -m " + bare + " --prompt-ids 2,105,2364 -n 3 --max-seq 16 --dump-logits " +
                                    file("bare.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const LogitsDump d = read_logits_dump(file("bare.safetensors"));
  EXPECT_EQ(parse_stdout_ids(r.out), d.tokens);  // no tokenizer: ids
  ASSERT_FALSE(d.tokens.empty());
  EXPECT_EQ(argmax(d.prefill_logits), d.tokens[0]);  // no generation_config.json: greedy
  const auto p = test::run_staticlm("run -m " + bare + " -p hello");
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_EQ(p.err, "error: run: -p needs the checkpoint's tokenizer.json, which " + bare +
                       " does not have; give --prompt-ids instead\n");
  const bool eos = r.err.find("stopped: eos") != std::string::npos;
  EXPECT_TRUE(eos || (d.tokens.size() == 3 && r.err.find("stopped: max new tokens") != std::string::npos)) << r.err;
  fs::remove_all(bare);
}

// --config reads the runtime config (TICO's keys); --set and --max-seq override it in that order.
TEST_F(Generate, RuntimeConfigFileSetsMaxSeqAndRope) {
  write_text_atomic(file("runtime.yaml"), "debug:\n  static_gemma4_runtime:\n    max_seq: 4\n    rope_sine: hf\n");
  const std::string prompt = " --prompt-ids 2,105,2364,107";
  auto r = test::run_staticlm("run -m " + model() + " --config " + file("runtime.yaml") + prompt);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("max_seq 4 leaves room for 3"), std::string::npos) << r.err;
  r = test::run_staticlm("run -m " + model() + " --config " + file("runtime.yaml") + " --set max_seq=64" + prompt +
                         " -n 2 --temp 0");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto direct = test::run_staticlm("run -m " + model() + " --max-seq 64" + prompt + " -n 2 --temp 0");
  EXPECT_EQ(r.out, direct.out);
  write_text_atomic(file("bad.yaml"), "max_seq: 64\nbogus: 1\n");
  r = test::run_staticlm("run -m " + model() + " --config " + file("bad.yaml") + prompt);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
}

TEST_F(Generate, BadInputGetsOneLineErrors) {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--prompt-ids 2,262144", "error: --prompt-ids: token id 262144 (item 2) is outside the vocabulary [0, 262144)\n"},
      {"--prompt-ids 2,x", "error: --prompt-ids: \"x\" (item 2) is not a token id; expected comma-separated integers "
                           "such as 2,105,2364\n"},
      {"--prompt-ids 2,105,2364,107 --max-seq 4",
       "error: run: the prompt has 4 tokens but max_seq 4 leaves room for 3 (one slot is kept for decoding); raise "
       "--max-seq\n"},
      {"--prompt-ids 2 --temp nan", "error: sampling option temperature = nan: expected a number >= 0 (0: greedy)\n"},
      {"--prompt-ids 2 --top-p 0", "error: sampling option top_p = 0: expected a number in (0, 1] (1: off)\n"},
      {"--prompt-ids 2 --set rope_sine=neox",
       "error: --set rope_sine=neox: rope_sine: 'neox' is not one of: hf, pre_negated_sin\n"},
      {"--prompt-ids 2 --set padding_side=left",
       "error: --set padding_side=left: padding_side: Unsupported padding_side 'left': only 'right' padding is "
       "supported by the Gemma 4 static runtime\n"},
      {"--prompt-ids 2 -n 0", "error: -n 0: must be at least 1 (-1 or -2: until the cache is full)\n"},
      {"", "error: run: give exactly one of -p/--prompt, -f/--file, --prompt-ids, --messages\n"},
      {"-p hi -f " + file("nope.txt"), "error: run: give exactly one of -p/--prompt, -f/--file, --prompt-ids, --messages\n"},
      {"-f " + file("nope.txt"), "error: " + file("nope.txt") + ": cannot open for reading (No such file or directory)\n"},
      {"--prompt-ids 2 --chat", "error: run: --chat goes with -p, not --prompt-ids\n"},
  };
  for (const Case& c : cases) {
    const auto r = test::run_staticlm("run -m " + model() + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_EQ(r.err, c.message) << c.args;
    EXPECT_TRUE(r.out.empty()) << c.args;
  }
  const auto target = test::run_staticlm("run -m " + model() + " --prompt-ids 2 --kernel-target NEON9");
  EXPECT_EQ(target.exit_code, 2);
  EXPECT_EQ(target.err.rfind("error: kernel target 'NEON9' is not available on this CPU; available: scalar,", 0), 0u)
      << target.err;
  const auto colour = test::run_staticlm("run -m " + model() + " --prompt-ids 2 --set colour=red");
  EXPECT_EQ(colour.exit_code, 2);
  EXPECT_EQ(colour.err.rfind("error: --set colour=red: unknown key 'colour'; known keys: model, max_seq,", 0), 0u)
      << colour.err;
  const auto missing = test::run_staticlm("run -m " + file("nowhere") + " --prompt-ids 2");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("nowhere"), std::string::npos) << missing.err;
  // No half-written dump when the run fails.
  const auto bad = test::run_staticlm("run -m " + model() + " --prompt-ids 2,999999 --dump-logits " + file("x.st"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_FALSE(fs::exists(file("x.st")));
}

// Goldens written by tools/hf_golden.py (Hugging Face transformers, float32, eager) on a
// checkpoint made by make-model: rebuild the same checkpoint and compare the dumps, on every
// kernel target. A bad --kernel-target is refused by name.
TEST(Golden, MatchesHuggingFace) {
  const fs::path dir = test::fixture("golden");
  std::vector<fs::path> goldens;
  if (fs::exists(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".safetensors") goldens.push_back(e.path());
    }
  }
  if (goldens.empty()) GTEST_SKIP() << "no golden files in " << dir << " (tools/hf_golden.py makes them)";
  if (test::gemma3_tokenizer_path().empty()) GTEST_SKIP() << "Gemma 3 tokenizer.json not fetched";
  for (const fs::path& g : goldens) {
    SCOPED_TRACE(g.string());
    const auto meta = SafetensorsFile::open(g.string())->metadata();
    const LogitsDump want = read_logits_dump(g.string());
    test::TempDir tmp;
    const auto made = test::run_staticlm("make-model " + meta.at("make_model_args") + " --out " + tmp.file("m"));
    ASSERT_EQ(made.exit_code, 0) << made.err;
    // On every kernel target this CPU has, the scalar reference included.
    for (const std::string& target : cpu::kernel_targets()) {
      SCOPED_TRACE("--kernel-target " + target);
      const auto r = test::run_staticlm("run -m " + tmp.file("m") + " --prompt-ids " + meta.at("prompt_ids") + " -n " +
                                        meta.at("max_new_tokens") + " --max-seq " + meta.at("max_seq") +
                                        " --temp 0 --kernel-target '" + target + "' --dump-logits " +
                                        tmp.file("d.safetensors"));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const LogitsDump got = read_logits_dump(tmp.file("d.safetensors"));
      EXPECT_EQ(got.tokens, want.tokens);
      EXPECT_LT(max_abs_diff(got.prefill_logits, want.prefill_logits), 1e-4f);
      if (got.tokens == want.tokens) {
        EXPECT_LT(max_abs_diff(got.decode_logits, want.decode_logits), 1e-4f);
      }
    }
  }
}

}  // namespace
}  // namespace staticlm
