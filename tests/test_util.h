// Helpers shared by the test binaries: temporary directories and running the CLI.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/make_model.h"

namespace staticlm::test {

// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// A copy of s, e.g. of a logits row that the next call overwrites.
inline std::vector<float> to_vector(std::span<const float> s) { return {s.begin(), s.end()}; }

// Runs the staticlm binary with the given argument string (shell-quoted by the caller).
CommandResult run_staticlm(const std::string& args);
// Runs any shell command line (e.g. an example program) the same way.
CommandResult run_command(const std::string& command);

// Path of a file under tests/fixtures.
std::string fixture(const std::string& name);

// The Gemma 3 tokenizer.json that scripts/setup.sh fetched, or "" when it is missing.
std::string gemma3_tokenizer_path();

// `make-model --preset tiny --seed seed` into out_dir, in process.
// make-model --preset tiny --seed SEED (uniform init unless told) into out_dir.
void make_tiny_model(const std::string& out_dir, std::uint64_t seed, WeightInit init = WeightInit::kUniform);

}  // namespace staticlm::test
