// staticlm tokenize --tokenizer FILE (--text T | --jsonl F) [--bos] [--json]
// Prints the ids of the text; with --jsonl (one JSON string per line) one JSON array per line.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "base/error.h"
#include "base/file.h"
#include "cli_text_util.h"
#include "commands.h"
#include "text/tokenizer.h"

namespace staticlm::cli {
namespace {

struct TokenizeOptions {
  std::string tokenizer, model_dir, text, jsonl;
  bool has_text = false, bos = false, json = false;
};

std::string ids_json(const std::vector<int>& ids) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

void run_tokenize(const TokenizeOptions& o) {
  if (o.has_text == !o.jsonl.empty()) invalid_argument("give exactly one of --text and --jsonl");
  const auto tok = Tokenizer::load(tokenizer_path(o.tokenizer, o.model_dir));
  std::string out;
  if (o.has_text) {
    const std::vector<int> ids = tok->encode(o.text, o.bos);
    if (o.json) {
      out = ids_json(ids);
    } else {
      for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
    }
    out += '\n';
  } else {
    const std::string data = read_file(o.jsonl);
    std::istringstream lines(data);
    std::string line;
    std::size_t number = 0;
    while (std::getline(lines, line)) {
      ++number;
      if (line.empty() && lines.peek() == std::char_traits<char>::eof()) break;  // final newline
      if (line.find_first_not_of(" \t\r") == std::string::npos) {
        invalid_argument(o.jsonl + ":" + std::to_string(number) + ": empty line; expected a JSON string (\"\" for empty text)");
      }
      nlohmann::json value;
      try {
        value = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        invalid_argument(o.jsonl + ":" + std::to_string(number) + ": not valid JSON: " + e.what());
      }
      if (!value.is_string()) invalid_argument(o.jsonl + ":" + std::to_string(number) + ": expected a JSON string");
      out += ids_json(tok->encode(value.get<std::string>(), o.bos));
      out += '\n';
    }
  }
  std::cout << out << std::flush;
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto opts = std::make_shared<TokenizeOptions>();
  auto* cmd = app.add_subcommand("tokenize", "Encode text to token ids with a tokenizer.json");
  cmd->add_option("--tokenizer", opts->tokenizer, "tokenizer.json to use");
  cmd->add_option("-m,--model", opts->model_dir, "model directory (uses its tokenizer.json)");
  cmd->add_option("--text", opts->text, "text to encode")->each([opts](const std::string&) { opts->has_text = true; });
  cmd->add_option("--jsonl", opts->jsonl, "file with one JSON string per line; prints one JSON array per line");
  cmd->add_flag("--bos", opts->bos, "add the post-processor's special tokens (<bos>)");
  cmd->add_flag("--json", opts->json, "print the ids of --text as a JSON array");
  cmd->callback([opts] { run_tokenize(*opts); });
}

}  // namespace staticlm::cli
