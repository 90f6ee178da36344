#include "model/gemma4_vocab.h"

#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"

namespace staticlm {

namespace {
constexpr std::int64_t kGemma4VocabSize = 262144;

bool is_unused_name(const std::string& s) {
  // "<unusedN>" with N decimal digits.
  if (s.size() < 9 || s.rfind("<unused", 0) != 0 || s.back() != '>') return false;
  for (std::size_t i = 7; i + 1 < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}
}  // namespace

const std::vector<Gemma4Rename>& gemma4_renames() {
  static const std::vector<Gemma4Rename> renames = {
      {46, "<unused40>", "<|tool>"},
      {47, "<unused41>", "<tool|>"},
      {48, "<unused42>", "<|tool_call>"},
      {49, "<unused43>", "<tool_call|>"},
      {50, "<unused44>", "<|tool_response>"},
      {51, "<unused45>", "<tool_response|>"},
      {52, "<unused46>", "<|\"|>"},
      {98, "<unused92>", "<|think|>"},
      {100, "<unused94>", "<|channel>"},
      {101, "<unused95>", "<channel|>"},
      {105, "<start_of_turn>", "<|turn>"},
      {106, "<end_of_turn>", "<turn|>"},
      {255999, "<start_of_image>", "<|image>"},
      {256000, "<end_of_image>", "<|audio>"},
      {258880, "<unused2978>", "<|image|>"},
      {258881, "<unused2979>", "<|audio|>"},
      {258882, "<unused2980>", "<image|>"},
      {258883, "<unused2981>", "<audio|>"},
      {258884, "<unused2982>", "<|video|>"},
  };
  return renames;
}

bool gemma4_is_control_token(std::int64_t id) {
  return (id >= 0 && id <= 4) || id == 46 || id == 47 || id == 98 || id == 105 || id == 106 || id == 255999 ||
         id == 256000 || (id >= 258880 && id <= 258884);
}

std::string gemma4_tokenizer_json(const std::string& gemma3_tokenizer_json, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(gemma3_tokenizer_json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) invalid_file(source + ": not a JSON object");
  if (!j.contains("model") || !j["model"].is_object() || !j["model"].contains("vocab") ||
      !j["model"]["vocab"].is_object())
    invalid_file(source + ": model.vocab missing: not a tokenizer.json");
  auto& vocab = j["model"]["vocab"];

  // id -> piece.
  std::vector<std::string> pieces(kGemma4VocabSize);
  std::vector<bool> seen(kGemma4VocabSize, false);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer()) invalid_file(source + ": model.vocab[\"" + it.key() + "\"] is not an integer id");
    const auto id = it.value().get<std::int64_t>();
    if (id < 0 || id >= kGemma4VocabSize || seen[id])
      invalid_file(source + ": model.vocab id " + std::to_string(id) + " is out of range or repeated: expected the "
                   "262144-entry Gemma 3 vocabulary");
    seen[id] = true;
    pieces[id] = it.key();
  }
  if (vocab.size() != static_cast<std::size_t>(kGemma4VocabSize))
    invalid_file(source + ": model.vocab has " + std::to_string(vocab.size()) + " entries, expected 262144");

  std::set<std::int64_t> renamed;
  for (const auto& r : gemma4_renames()) {
    if (pieces[r.id] != r.gemma3)
      invalid_file(source + ": id " + std::to_string(r.id) + " is \"" + pieces[r.id] + "\", expected Gemma 3's \"" +
                   r.gemma3 + "\"");
    pieces[r.id] = r.gemma4;
    renamed.insert(r.id);
  }
  // Renumber the remaining unused slots 0, 1, 2, ... in id order.
  std::int64_t next_unused = 0;
  for (std::int64_t id = 0; id < kGemma4VocabSize; ++id) {
    if (!renamed.count(id) && is_unused_name(pieces[id])) pieces[id] = "<unused" + std::to_string(next_unused++) + ">";
  }

  nlohmann::json new_vocab = nlohmann::json::object();
  for (std::int64_t id = 0; id < kGemma4VocabSize; ++id) new_vocab[pieces[id]] = id;
  if (new_vocab.size() != static_cast<std::size_t>(kGemma4VocabSize))
    invalid_file(source + ": renaming produced duplicate pieces");
  vocab = std::move(new_vocab);

  // Added tokens: same names as the vocab; control tokens special, the renamed tool and channel
  // tokens not; ids past the vocabulary (Gemma 3's <image_soft_token>) dropped.
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    nlohmann::json kept = nlohmann::json::array();
    for (auto& t : j["added_tokens"]) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer())
        invalid_file(source + ": added_tokens entry without an integer id");
      const auto id = t["id"].get<std::int64_t>();
      if (id < 0 || id >= kGemma4VocabSize) continue;
      t["content"] = pieces[id];
      if (renamed.count(id) || gemma4_is_control_token(id)) t["special"] = gemma4_is_control_token(id);
      kept.push_back(std::move(t));
    }
    j["added_tokens"] = std::move(kept);
  }
  return j.dump();
}

}  // namespace staticlm
