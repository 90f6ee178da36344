// The Gemma 4 tokenizer vocabulary, derived from Gemma 3's tokenizer.json (spec/gemma4.md 6.1):
// the merges and pieces are identical; 19 ids are renamed to the Gemma 4 control and tool
// tokens, every other "<unusedN>" is renumbered so N counts 0, 1, 2, ... in id order, and
// Gemma 3's added id 262144 "<image_soft_token>" is dropped (Gemma 4's vocab is exactly 262144).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace staticlm {

struct Gemma4Rename {
  std::int64_t id;
  const char* gemma3;  // the name in Gemma 3's tokenizer.json
  const char* gemma4;
};

// The 19 renames of spec 6.1, in id order.
const std::vector<Gemma4Rename>& gemma4_renames();

// True for Gemma 4's 17 control (special) tokens: 0-4, 46, 47, 98, 105, 106, 255999, 256000,
// 258880-258884.
bool gemma4_is_control_token(std::int64_t id);

// Gemma 4's tokenizer.json text from Gemma 3's. Throws kInvalidFile naming `source` when the
// input is not Gemma 3's tokenizer (wrong vocab size, a renamed id holding another name).
std::string gemma4_tokenizer_json(const std::string& gemma3_tokenizer_json, const std::string& source);

}  // namespace staticlm
