// Helpers for the text tests: the Gemma tokenizers (loaded once per test binary) and fixture
// files. The Tokenizers are owned by function-local statics.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/file.h"
#include "test_util.h"
#include "text/tokenizer.h"

namespace staticlm::test {

// The real Gemma 3 tokenizer.json, or null when scripts/setup.sh has not fetched it.
inline const Tokenizer* gemma3_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    const std::string path = gemma3_tokenizer_path();
    return path.empty() ? nullptr : Tokenizer::load(path);
  }();
  return tok.get();
}

#define STATICLM_REQUIRE_GEMMA3(tok)                                                       \
  const ::staticlm::Tokenizer* tok = ::staticlm::test::gemma3_tokenizer();                 \
  if (tok == nullptr) GTEST_SKIP() << "the Gemma tokenizer.json is missing (run scripts/setup.sh)"

// The Gemma 4 tokenizer of the tiny model (make_tiny_model's, seed 1).
inline const Tokenizer& gemma4_tokenizer() {
  static const std::unique_ptr<Tokenizer> tok = [] {
    static TempDir dir;
    make_tiny_model(dir.path(), 1);
    return Tokenizer::load(dir.file("tokenizer.json"));
  }();
  return *tok;
}

// One JSON value per line.
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  const std::string data = read_file(path);
  std::size_t pos = 0;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    if (end > pos) out.push_back(nlohmann::json::parse(data.substr(pos, end - pos)));
    pos = end + 1;
  }
  return out;
}

inline std::vector<std::string> corpus() {
  std::vector<std::string> texts;
  for (const auto& j : read_jsonl(fixture("text/corpus.jsonl"))) texts.push_back(j.get<std::string>());
  return texts;
}

}  // namespace staticlm::test
