#include "text/detokenizer.h"

#include <span>

#include "base/error.h"

namespace staticlm {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool ends_with_replacement(const std::string& s) {
  return s.size() >= kReplacement.size() && s.compare(s.size() - kReplacement.size(), kReplacement.size(), kReplacement) == 0;
}

}  // namespace

std::string IncrementalDetokenizer::window(std::size_t end) const {
  return tokenizer_.decode(std::span<const int>(ids_).subspan(prefix_, end - prefix_), skip_special_);
}

std::string IncrementalDetokenizer::push(int id) {
  if (!tokenizer_.id_to_token(id)) {
    out_of_range("token id " + std::to_string(id) + " is not in the vocabulary of " + tokenizer_.name());
  }
  ids_.push_back(id);
  const std::string before = window(read_);
  const std::string now = window(ids_.size());
  // Hold back while the newest text ends in an unfinished character (U+FFFD from byte fallback).
  if (now.size() <= before.size() || ends_with_replacement(now)) return std::string();
  prefix_ = read_;
  read_ = ids_.size();
  return now.substr(before.size());
}

std::string IncrementalDetokenizer::finish() {
  const std::string before = window(read_);
  const std::string now = window(ids_.size());
  ids_.clear();
  prefix_ = read_ = 0;
  return now.size() > before.size() ? now.substr(before.size()) : std::string();
}

}  // namespace staticlm
