// The CLI over the library: a missing or unknown subcommand is named with the valid ones, and
// errors raised inside the library reach the command line as one "error:" line with exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.h"
#include "tiny_model.h"

namespace staticlm {
namespace {

TEST(CliSubcommands, UnknownOneIsNamedWithTheValidOnes) {
  const auto r = test::run_staticlm("frobnicate -m x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: unknown subcommand 'frobnicate'; valid subcommands: info, make-model, ", 0), 0u) << r.err;
  // Every subcommand `--help` lists is in the list.
  const auto help = test::run_staticlm("--help");
  for (const char* name : {"run", "inputs", "inspect", "chat", "serve", "replay", "quantize"}) {
    EXPECT_NE(help.out.find(std::string("  ") + name), std::string::npos) << name;
    EXPECT_NE(r.err.find(std::string(", ") + name), std::string::npos) << name;
  }
  const auto none = test::run_staticlm("");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.rfind("error: a subcommand is required; one of: info, ", 0), 0u) << none.err;
  EXPECT_EQ(test::run_staticlm("--version").exit_code, 0);
}

class CliAdapter : public test::TinyModelTest {};

TEST_F(CliAdapter, LibraryErrorsAreOneLineWithExitTwo) {
  // The session refuses the runtime config key; the message names it.
  const auto r = test::run_staticlm("run -m " + model() + " -p hi -n 1 --set nope_key=1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("nope_key"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  // An image the library cannot decode.
  const auto img = test::run_staticlm("run -m " + model() + " -p '<|image|>hi' -n 1 --image " + dir_->file("missing.png"));
  EXPECT_EQ(img.exit_code, 2);
  EXPECT_NE(img.err.find(dir_->file("missing.png")), std::string::npos) << img.err;
}

// llama.cpp's habits: -p's escapes are the characters (its default -e), --no-escape keeps them
// as written, a file is read as written; its one-dash long flags (-ngl 99, -fa, -ub 64) are not
// read as -n gl, -f a, ...; its tuning flags are noted and change nothing computed. The dumps
// hold the prefill logits, so equal dumps mean the same prompt.
TEST_F(CliAdapter, LlamaCppEscapesAndTuningFlags) {
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir_->file(name), std::ios::binary) << text;
    return dir_->file(name);
  };
  int n = 0;
  const auto dump = [&](const std::string& flags, std::string* err = nullptr) {
    const std::string out = dir_->file("d" + std::to_string(n++) + ".safetensors");
    const auto r = test::run_staticlm("run -m " + model() + " -n 1 --temp 0 --dump-logits " + out + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    if (err) *err = r.err;
    std::ifstream f(out, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string newline = write("nl.txt", "x\ny"), literal = write("lit.txt", "x\\ny");
  const std::string real = dump("-f " + newline), as_written = dump("-f " + literal);
  ASSERT_FALSE(real.empty());
  EXPECT_NE(real, as_written);  // the two prompts differ
  EXPECT_EQ(dump("-p 'x\\ny'"), real);
  EXPECT_EQ(dump("-e -p 'x\\ny'"), real);
  EXPECT_EQ(dump("--no-escape -p 'x\\ny'"), as_written);
  EXPECT_EQ(dump("-p '\\x41\\tb\\q\\\\'"), dump("-f " + write("tab.txt", "A\tb\\q\\")));
  std::string err;
  EXPECT_EQ(dump("-p 'x\\ny' -ngl 99 -fa -ub 64 -ctk f16 --mlock --color -b 32 -tb 1 --no-warmup", &err), real);
  for (const char* note : {"note: --n-gpu-layers 99 has no effect", "note: --flash-attn has no effect", "note: --ubatch-size 64 has no effect",
                           "note: --cache-type-k f16 has no effect", "note: --mlock has no effect", "note: --batch-size 32 has no effect",
                           "note: --threads-batch 1 has no effect", "note: --no-warmup has no effect"}) {
    EXPECT_NE(err.find(note), std::string::npos) << note << " in " << err;
  }
  EXPECT_EQ(err.find("--color"), std::string::npos) << err;  // cosmetic: accepted silently
  EXPECT_NE(err.find("\nprefill: "), std::string::npos) << err;

  // --verbose-prompt lists the prompt's ids as `tokenize` gives them; --no-perf drops the statistics.
  const auto verbose = test::run_staticlm("run -m " + model() + " -n 1 --temp 0 --verbose-prompt --no-perf -p 'x\\ny z'");
  ASSERT_EQ(verbose.exit_code, 0) << verbose.err;
  const auto ids = nlohmann::json::parse(test::run_staticlm("tokenize -m " + model() + " --json --text \"$(printf 'x\\ny z')\"").out);
  ASSERT_GE(ids.size(), 3u);
  std::istringstream lines(verbose.err);
  std::string line;
  std::vector<std::int64_t> listed;
  ASSERT_TRUE(std::getline(lines, line));
  EXPECT_EQ(line, "prompt: " + std::to_string(ids.size()) + " tokens");
  while (std::getline(lines, line)) {
    if (line.find(" -> '") != std::string::npos) listed.push_back(std::stoll(line));
  }
  EXPECT_EQ(nlohmann::json(listed), ids) << verbose.err;
  EXPECT_EQ(verbose.err.find("prefill: "), std::string::npos) << verbose.err;
}

// llama-cli's command lines: -no-cnv is what run does anyway, -st is --chat (one turn), -r is a
// stop string, -sp prints the control tokens (a bias forces <bos>, a control token, three times),
// and its one-dash placement and logging flags are noted without changing the logits; what run
// cannot be (-cnv, -i) or cannot compute as asked (-hf, --lora, --rope-freq-base) is refused by
// name, exit 2, before the model loads. chat takes -i / -cnv and refuses -no-cnv.
TEST_F(CliAdapter, LlamaCliConversationSpecialAndRefusedFlags) {
  const auto run = [&](const std::string& flags) {
    return test::run_staticlm("run -m " + model() + " --temp 0 " + (flags.find("-n ") == std::string::npos ? "-n 3 " : "") + flags);
  };
  const auto plain = run("-p 'x y'");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(run("-p 'x y' -no-cnv").out, plain.out);
  // llama.cpp's values: a temperature below 0 is greedy; -n -2 (until the context is filled) is -n -1.
  EXPECT_EQ(test::run_staticlm("run -m " + model() + " -p 'x y' -n 3 --temp -1").out, plain.out);
  const auto filled = test::run_staticlm("run -m " + model() + " -p 'x y' --temp 0 -n -2 --max-seq 32 --ignore-eos");
  ASSERT_EQ(filled.exit_code, 0) << filled.err;
  EXPECT_NE(filled.err.find("generated 30 tokens; stopped: cache full"), std::string::npos) << filled.err;
  const auto chat = run("-p 'x y' --chat");
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  EXPECT_EQ(run("-p 'x y' -st").out, chat.out);
  EXPECT_NE(chat.out, plain.out);  // the chat format is another prompt

  // -r: the reply stops at the text, as --stop (an ASCII letter of the reply past its first byte).
  const auto free = run("-p 'x y' -n 12 --ignore-eos --no-perf");
  const std::size_t at = free.out.find_first_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", 1);
  ASSERT_NE(at, std::string::npos) << free.out;
  const std::string letter = free.out.substr(at, 1);
  const auto stopped = run("-p 'x y' -n 12 --ignore-eos --no-perf -r " + letter);
  EXPECT_EQ(stopped.out, run("-p 'x y' -n 12 --ignore-eos --no-perf --stop " + letter).out);
  EXPECT_LT(stopped.out.size(), free.out.size()) << stopped.out;

  const auto special = run("-p hi -l 2+1000 -sp --no-perf"), bare = run("-p hi -l 2+1000 --no-perf");
  ASSERT_EQ(special.exit_code, 0) << special.err;
  EXPECT_EQ(special.out, "<bos><bos><bos>\n");
  EXPECT_EQ(bare.out, "\n");  // control tokens left out
  EXPECT_EQ(run("-p hi -sp --json").exit_code, 2);

  // Placement, affinity and logging flags: noted, the prefill logits unchanged.
  const std::string a = dir_->file("a.safetensors"), b = dir_->file("b.safetensors");
  ASSERT_EQ(run("-p 'x y' -n 1 --dump-logits " + a).exit_code, 0);
  const auto tuned = run("-p 'x y' -n 1 --dump-logits " + b +
                         " -sm none -mg 0 -ts 1 -dev none -ot x=CPU -C 0x3 -Cr 0-1 -kvu -lv 1 -v -co --keep 4 -ctxcp 2 -fitt 512");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  const auto bytes = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  EXPECT_EQ(bytes(a), bytes(b));
  for (const char* note : {"note: --split-mode none has no effect", "note: --main-gpu 0 has no effect", "note: --tensor-split 1 has no effect",
                           "note: --device none has no effect", "note: --override-tensor x=CPU has no effect", "note: --cpu-mask 0x3 has no effect",
                           "note: --cpu-range 0-1 has no effect", "note: --kv-unified has no effect", "note: --verbosity 1 has no effect",
                           "note: --verbose has no effect", "note: --keep 4 has no effect", "note: --ctx-checkpoints 2 has no effect",
                           "note: --fit-target 512 has no effect"}) {
    EXPECT_NE(tuned.err.find(note), std::string::npos) << note << " in " << tuned.err;
  }

  // A sampling flag whose stage an order leaves out is noted; those in the order are not.
  const auto sampled = [&](const std::string& flags) { return test::run_staticlm("run -m " + model() + " -p hi -n 1 --seed 1 " + flags); };
  const auto ordered = sampled("--temp 0.7 --samplers 'top_k;temperature' --top-k 5 --top-p 0.5 --repeat-penalty 1.3");
  ASSERT_EQ(ordered.exit_code, 0) << ordered.err;
  EXPECT_NE(ordered.err.find("note: --top-p has no effect: --samplers leaves out top_p\n"), std::string::npos) << ordered.err;
  EXPECT_NE(ordered.err.find("note: --repeat-penalty has no effect: --samplers leaves out penalties\n"), std::string::npos) << ordered.err;
  EXPECT_EQ(ordered.err.find("--top-k has no effect"), std::string::npos) << ordered.err;
  EXPECT_EQ(ordered.err.find("--temp has no effect"), std::string::npos) << ordered.err;
  const auto letters = sampled("--sampling-seq kp --min-p 0.2 --temp 0.7");
  EXPECT_NE(letters.err.find("note: --min-p has no effect: --sampling-seq leaves out min_p\n"), std::string::npos) << letters.err;
  EXPECT_NE(letters.err.find("note: --temp has no effect: --sampling-seq leaves out temperature\n"), std::string::npos) << letters.err;
  const auto greedy = run("-p hi -n 1 --samplers top_k --top-p 0.5");
  EXPECT_NE(greedy.err.find("note: --samplers has no effect: --temp 0 is greedy\n"), std::string::npos) << greedy.err;
  EXPECT_EQ(greedy.err.find("--top-p has no effect"), std::string::npos) << greedy.err;

  for (const auto& [flags, named] : std::vector<std::pair<std::string, std::string>>{
           {"-cnv", "error: --conversation: run answers one prompt"},
           {"-i", "error: --interactive: run answers one prompt"},
           {"--in-prefix 'U:'", "error: --in-prefix: run answers one prompt"},
           {"-hf google/gemma-4-E2B-it", "error: --hf-repo: not supported: staticlm downloads nothing"},
           {"--lora x.gguf", "error: --lora: not supported"},
           {"--rope-freq-base 20000", "error: --rope-freq-base: not supported"},
           // One-dash long spellings staticlm has no flag for are the long flag they are, not a
           // one-letter flag and a value (-mm x as -m m, -sysf F as --seed ysf).
           {"-mm x.gguf", "error: --mmproj: not supported: the checkpoint directory holds the vision tower"},
           {"-hft abc", "error: --hf-token: not supported"},
           {"-sysf " + dir_->file("no-such-file"), "error: " + dir_->file("no-such-file") + ": cannot open"},
           {"-bs", "error: The following argument was not expected: --backend-sampling"}}) {
    const auto r = test::run_staticlm("run -m " + dir_->file("no-such-model") + " -p hi " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_EQ(r.err.rfind(named, 0), 0u) << flags << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  EXPECT_EQ(test::run_staticlm("chat -m " + dir_->file("no-such-model") + " -no-cnv").err.rfind("error: --no-conversation: chat is a conversation", 0), 0u);
  const auto interactive = test::run_staticlm("chat -m " + model() + " -i -cnv -if --no-perf -n 2 </dev/null");
  EXPECT_EQ(interactive.exit_code, 0) << interactive.err;
}

// The CLI orchestrates nothing: no subcommand makes a thread pool, a back end, a runtime or a
// static input builder (the library does, and owns them); apps/ turns flags into options and
// prints results.
TEST(CliAdapterSources, AppsBuildNoRuntimeObjects) {
  const std::filesystem::path apps = std::filesystem::path(STATICLM_TEST_FIXTURES) / ".." / ".." / "apps" / "staticlm";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(apps)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string src = text.str();
    ++files;
    for (const char* banned : {"base/thread_pool.h", "ThreadPool pool", "make_unique<ThreadPool>", "create_backend(",
                               "CpuBackend::create(", "PluginBackend::load(", "Runtime::create(",
                               "StaticInputBuilder::create(", "runtime/runtime.h", "runtime/static_input_builder.h"}) {
      EXPECT_EQ(src.find(banned), std::string::npos) << entry.path().filename() << " holds " << banned;
    }
  }
  EXPECT_GE(files, 16);  // the directory was found and read
}

}  // namespace
}  // namespace staticlm
