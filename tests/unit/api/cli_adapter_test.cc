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
