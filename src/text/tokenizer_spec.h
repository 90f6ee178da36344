// TokenizerSpec: the parts of a Hugging Face tokenizer.json that this runtime supports, as plain
// values. tokenizer_json.cc fills it from the file (and refuses what is not listed here); the
// Tokenizer builds its working parts from it. Every value is owned by the spec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace staticlm {

// The largest token id a tokenizer.json may use, checked as it is read: tables are indexed by
// id, so one sparse id would size them (2^31 asked for gigabytes). It is what the BPE pair
// table's 21-bit ids hold (PairMap::kMaxId ids, 0 to kMaxId - 1); real vocabularies stay
// under 300,000 ids.
inline constexpr std::int64_t kMaxTokenId = (std::int64_t{1} << 21) - 3;

// {"String": "..."} or {"Regex": "..."}.
struct PatternSpec {
  bool is_regex = false;
  std::string text;
};

struct AddedTokenSpec {
  int id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool single_word = false;
};

struct NormalizerSpec {
  enum class Type { kReplace, kPrepend, kNfc, kNfd, kNfkc, kNfkd, kSequence };
  Type type = Type::kSequence;
  PatternSpec pattern;                  // kReplace
  std::string content;                  // kReplace: replacement; kPrepend: prefix
  std::vector<NormalizerSpec> children;  // kSequence
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
enum class PrependScheme { kAlways, kNever, kFirst };

struct PreTokenizerSpec {
  enum class Type { kSplit, kMetaspace, kByteLevel, kDigits, kSequence };
  Type type = Type::kSequence;
  PatternSpec pattern;                    // kSplit
  SplitBehavior behavior = SplitBehavior::kRemoved;
  bool invert = false;
  char32_t replacement = U'\u2581';       // kMetaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;                      // kMetaspace: split on the replacement character
  bool add_prefix_space = true;           // kByteLevel: a space before a piece that has none
  bool use_regex = true;                  // kByteLevel: split with byte_level.h's pattern first
  bool individual_digits = false;         // kDigits: each digit alone (else runs of digits)
  std::vector<PreTokenizerSpec> children;  // kSequence
};

// The vocabulary and merges are large (262144 tokens, 514906 merges for Gemma), so their strings
// live in one arena and are referred to by offset and size.
struct BpeSpec {
  struct Str {
    std::uint32_t offset = 0, size = 0;
  };
  std::string strings;                        // arena for vocab and merges
  std::vector<std::pair<Str, int>> vocab;     // token -> id
  std::vector<std::pair<Str, Str>> merges;    // in rank order
  std::optional<std::string> unk_token;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;

  Str add(std::string_view s) {
    const Str r{static_cast<std::uint32_t>(strings.size()), static_cast<std::uint32_t>(s.size())};
    strings.append(s);
    return r;
  }
  std::string_view view(Str s) const { return std::string_view(strings).substr(s.offset, s.size); }
};

struct DecoderSpec {
  enum class Type { kReplace, kByteFallback, kFuse, kStrip, kMetaspace, kByteLevel, kSequence };
  Type type = Type::kSequence;
  PatternSpec pattern;  // kReplace
  std::string content;  // kReplace: replacement; kStrip: the character to strip
  int start = 0;        // kStrip
  int stop = 0;         // kStrip
  char32_t replacement = U'\u2581';  // kMetaspace
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  std::vector<DecoderSpec> children;  // kSequence
};

// TemplateProcessing for single sequences: special ids before and after the text.
struct TemplateSpec {
  std::vector<int> before;
  std::vector<int> after;
};

struct TokenizerSpec {
  std::vector<AddedTokenSpec> added_tokens;
  std::optional<NormalizerSpec> normalizer;
  std::optional<PreTokenizerSpec> pre_tokenizer;
  BpeSpec model;
  std::optional<TemplateSpec> post_processor;
  std::optional<DecoderSpec> decoder;
};

}  // namespace staticlm
