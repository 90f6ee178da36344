#include "test_util.h"

#include "model/make_model.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace staticlm::test {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "staticlm-test-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

static std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CommandResult run_staticlm(const std::string& args) { return run_command(std::string(STATICLM_BIN) + " " + args); }

CommandResult run_command(const std::string& command) {
  TempDir dir;
  const std::string out = dir.file("out"), err = dir.file("err");
  const std::string cmd = command + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string fixture(const std::string& name) { return std::string(STATICLM_TEST_FIXTURES) + "/" + name; }

std::string gemma3_tokenizer_path() {
  const std::string p = std::string(STATICLM_DEPS_DIR) + "/tokenizer-gemma3/tokenizer.json";
  return std::filesystem::exists(p) ? p : std::string();
}

void make_tiny_model(const std::string& out_dir, std::uint64_t seed, WeightInit init) {
  MakeModelOptions o;
  o.init = init;
  o.preset = "tiny";
  o.seed = seed;
  o.out_dir = out_dir;
  o.gemma3_tokenizer_path = gemma3_tokenizer_path();
  make_model(o);
}

}  // namespace staticlm::test
