// PreTokenizer: the tokenizer.json "pre_tokenizer" (Split, Metaspace, ByteLevel, Digits, Sequence) with the
// `tokenizers` library's semantics: it cuts normalized pieces into smaller pieces, each of which
// the model then encodes on its own. Owns its compiled patterns; const methods are thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/normalized_text.h"
#include "text/regex.h"
#include "text/tokenizer_spec.h"

namespace staticlm {

class PreTokenizer {
 public:
  static std::unique_ptr<PreTokenizer> create(const PreTokenizerSpec& spec, const std::string& where);

  // Whether some step looks at where a piece starts in the input (Metaspace, prepend "first").
  bool needs_origins() const;

  // Replaces `pieces` by their pre-tokenized parts, in order; empty parts are dropped.
  void pre_tokenize(std::vector<NormalizedText>& pieces) const;

 private:
  struct Step {
    PreTokenizerSpec spec;          // children unused (a Sequence is flattened)
    std::unique_ptr<Regex> regex;   // kSplit; kByteLevel with use_regex
    std::string replacement;        // kMetaspace, as UTF-8
  };
  void add(const PreTokenizerSpec& spec, const std::string& where);
  void apply(const Step& step, NormalizedText&& piece, std::vector<NormalizedText>& out) const;
  std::vector<Step> steps_;
};

// One cut of a piece: byte range and whether it is a match of the pattern.
using Cut = std::pair<std::pair<std::size_t, std::size_t>, bool>;

// The cuts that cover `length` bytes given the sorted matches (upstream Pattern::find_matches).
std::vector<Cut> cuts_from_matches(std::size_t length, const std::vector<std::pair<std::size_t, std::size_t>>& matches);

// Applies a delimiter behaviour and slices `piece` accordingly, appending non-empty parts.
void split_by_cuts(const NormalizedText& piece, const std::vector<Cut>& cuts, SplitBehavior behavior,
                   std::vector<NormalizedText>& out);

}  // namespace staticlm
