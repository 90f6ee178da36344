// Normalizer: the tokenizer.json "normalizer" (Replace, Prepend, NFC/NFD/NFKC/NFKD, Sequence)
// with the `tokenizers` library's semantics, applied to one NormalizedText at a time. It owns
// its compiled patterns; normalize() is const and safe from several threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/normalized_text.h"
#include "text/regex.h"
#include "text/tokenizer_spec.h"
#include "text/unicode_normalize.h"

namespace staticlm {

class Normalizer {
 public:
  // `where` names the file and field for errors (bad regex).
  static std::unique_ptr<Normalizer> create(const NormalizerSpec& spec, const std::string& where);

  void normalize(NormalizedText& t) const;

 private:
  struct Step {
    NormalizerSpec::Type type;
    std::unique_ptr<Regex> regex;  // kReplace
    std::string content;
    UnicodeForm form = UnicodeForm::kNfc;
  };
  void add(const NormalizerSpec& spec, const std::string& where);
  std::vector<Step> steps_;  // a Sequence, flattened
};

// Replaces every match of `regex` in t by `content`, as NormalizedString::replace does: the new
// bytes take the origin of the last byte of the text they replace.
void replace_matches(NormalizedText& t, const Regex& regex, const std::string& content);

// Same, for given sorted, non-overlapping byte ranges.
void replace_ranges(NormalizedText& t, const std::vector<std::pair<std::size_t, std::size_t>>& ranges,
                    const std::string& content);

// Prepends `prefix` to a non-empty t (the new bytes take the origin of the first character).
void prepend_text(NormalizedText& t, const std::string& prefix);

}  // namespace staticlm
