// staticlm detokenize --tokenizer FILE --ids 1,2,3 [--skip-special]
// Prints the decoded text exactly (no newline is added).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli_text_util.h"
#include "commands.h"
#include "text/tokenizer.h"

namespace staticlm::cli {
namespace {

struct DetokenizeOptions {
  std::string tokenizer, model_dir, ids;
  bool skip_special = false;
};

std::vector<int> parse_ids(const std::string& s) {
  std::vector<int> ids;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    const std::size_t comma = std::min(s.find(',', pos), s.size());
    std::string item = s.substr(pos, comma - pos);
    const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
    if (item.empty()) {
      if (s.find_first_not_of(" \t") == std::string::npos) break;  // --ids "" means no ids
      invalid_argument("--ids: empty item in \"" + s + "\" (expected ids separated by commas)");
    }
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > 0x7FFFFFFF) {
      invalid_argument("--ids: \"" + item + "\" is not a token id (expected a non-negative integer)");
    }
    ids.push_back(static_cast<int>(v));
    pos = comma + 1;
  }
  return ids;
}

void run_detokenize(const DetokenizeOptions& o) {
  const std::vector<int> ids = parse_ids(o.ids);
  const auto tok = Tokenizer::load(tokenizer_path(o.tokenizer, o.model_dir));
  std::cout << tok->decode(ids, o.skip_special) << std::flush;
}

}  // namespace

void add_detokenize_command(CLI::App& app) {
  auto opts = std::make_shared<DetokenizeOptions>();
  auto* cmd = app.add_subcommand("detokenize", "Decode token ids to text with a tokenizer.json");
  cmd->add_option("--tokenizer", opts->tokenizer, "tokenizer.json to use");
  cmd->add_option("-m,--model", opts->model_dir, "model directory (uses its tokenizer.json)");
  cmd->add_option("--ids", opts->ids, "token ids separated by commas")->required();
  cmd->add_flag("--skip-special", opts->skip_special, "leave out special tokens");
  cmd->callback([opts] { run_detokenize(*opts); });
}

}  // namespace staticlm::cli
