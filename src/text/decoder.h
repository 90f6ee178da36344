// Decoder: the tokenizer.json "decoder" chain (Replace, ByteFallback, Fuse, Strip, Metaspace,
// ByteLevel, Sequence) with the `tokenizers` library's semantics: each step maps the list of token strings
// to a new list, and the result is their concatenation. Owns its patterns; decode() is const.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/regex.h"
#include "text/tokenizer_spec.h"

namespace staticlm {

class Decoder {
 public:
  static std::unique_ptr<Decoder> create(const DecoderSpec& spec, const std::string& where);

  // Runs the chain over `tokens` (consumed) and joins the result.
  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct Step {
    DecoderSpec spec;               // children unused (a Sequence is flattened)
    std::unique_ptr<Regex> regex;   // kReplace
    char32_t strip_char = 0;        // kStrip
    std::string replacement;        // kMetaspace, as UTF-8
  };
  void add(const DecoderSpec& spec, const std::string& where);
  std::vector<Step> steps_;
};

}  // namespace staticlm
