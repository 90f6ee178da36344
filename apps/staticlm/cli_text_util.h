// Helpers shared by the text subcommands (tokenize, detokenize, chat-format): resolving which
// tokenizer.json to read from --tokenizer / -m. Header-only; owns nothing.
#pragma once

#include <string>

#include "base/error.h"
#include "base/file.h"

namespace staticlm::cli {

// The tokenizer.json to use: --tokenizer FILE, or DIR/tokenizer.json for -m DIR.
inline std::string tokenizer_path(const std::string& tokenizer_flag, const std::string& model_dir) {
  if (!tokenizer_flag.empty() && !model_dir.empty()) invalid_argument("give --tokenizer or -m, not both");
  if (!tokenizer_flag.empty()) return tokenizer_flag;
  if (model_dir.empty()) invalid_argument("--tokenizer FILE (or -m DIR) is required");
  const std::string path = path_join(model_dir, "tokenizer.json");
  if (!file_exists(path)) invalid_argument("model directory " + model_dir + " has no tokenizer.json");
  return path;
}

}  // namespace staticlm::cli
