#include "runtime/sampler_order.h"

#include <algorithm>
#include <array>
#include <utility>

#include "base/error.h"

namespace staticlm {

namespace {

struct Spelling {
  std::string_view name;
  SamplerStage stage;
};

// llama.cpp's canonical names first (sampler_stage_name reads them), then its other spellings.
constexpr std::array<Spelling, 20> kSpellings = {{
    {"penalties", SamplerStage::kPenalties},
    {"dry", SamplerStage::kDry},
    {"top_n_sigma", SamplerStage::kTopNSigma},
    {"top_k", SamplerStage::kTopK},
    {"typ_p", SamplerStage::kTypicalP},
    {"top_p", SamplerStage::kTopP},
    {"min_p", SamplerStage::kMinP},
    {"xtc", SamplerStage::kXtc},
    {"temperature", SamplerStage::kTemperature},
    {"top-n-sigma", SamplerStage::kTopNSigma},
    {"top-k", SamplerStage::kTopK},
    {"typical_p", SamplerStage::kTypicalP},
    {"typical-p", SamplerStage::kTypicalP},
    {"typical", SamplerStage::kTypicalP},
    {"top-p", SamplerStage::kTopP},
    {"nucleus", SamplerStage::kTopP},
    {"min-p", SamplerStage::kMinP},
    {"temp", SamplerStage::kTemperature},
    {"penalty", SamplerStage::kPenalties},
    {"repetition", SamplerStage::kPenalties},
}};

constexpr std::array<std::pair<char, SamplerStage>, 9> kLetters = {{
    {'e', SamplerStage::kPenalties},
    {'d', SamplerStage::kDry},
    {'s', SamplerStage::kTopNSigma},
    {'k', SamplerStage::kTopK},
    {'y', SamplerStage::kTypicalP},
    {'p', SamplerStage::kTopP},
    {'m', SamplerStage::kMinP},
    {'x', SamplerStage::kXtc},
    {'t', SamplerStage::kTemperature},
}};

std::string known_names() {
  std::string out;
  for (std::size_t i = 0; i < 9; ++i) out += (i ? ", " : "") + std::string(kSpellings[i].name);
  return out;
}

void check_length(std::size_t n, std::string_view field) {
  if (n > kMaxSamplerStages) {
    invalid_argument(std::string(field) + ": " + std::to_string(n) + " samplers; at most " + std::to_string(kMaxSamplerStages) +
                     " (each runs every step)");
  }
}

}  // namespace

std::string_view sampler_stage_name(SamplerStage stage) {
  for (const Spelling& s : kSpellings) {
    if (s.stage == stage) return s.name;
  }
  return "?";
}

std::vector<SamplerStage> sampler_order_from_names(const std::vector<std::string>& names, std::string_view field) {
  check_length(names.size(), field);
  std::vector<SamplerStage> order;
  for (const std::string& name : names) {
    const Spelling* found = nullptr;
    for (const Spelling& s : kSpellings) {
      if (s.name == name) found = &s;
    }
    if (!found) {
      invalid_argument(std::string(field) + ": unknown sampler '" + name + "' (expected one of " + known_names() +
                       (name == "infill" ? "; infill needs fill-in-the-middle prompts, which staticlm does not take)" : ")"));
    }
    order.push_back(found->stage);
  }
  return order;
}

std::vector<SamplerStage> sampler_order_from_list(std::string_view list, std::string_view field) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(';', start), list.size());
    if (end > start) names.emplace_back(list.substr(start, end - start));  // empty pieces (a trailing ';') skipped
    start = end + 1;
  }
  return sampler_order_from_names(names, field);
}

std::vector<SamplerStage> sampler_order_from_letters(std::string_view letters, std::string_view field) {
  check_length(letters.size(), field);
  std::vector<SamplerStage> order;
  for (const char c : letters) {
    const auto* found = std::find_if(kLetters.begin(), kLetters.end(), [c](const auto& l) { return l.first == c; });
    if (found == kLetters.end()) {
      invalid_argument(std::string(field) + ": unknown sampler letter '" + std::string(1, c) +
                       "' (expected letters of edskypmxt: e penalties, d dry, s top_n_sigma, k top_k, y typ_p, p top_p, "
                       "m min_p, x xtc, t temperature)");
    }
    order.push_back(found->second);
  }
  return order;
}

}  // namespace staticlm
