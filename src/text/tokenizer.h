// Tokenizer: a Hugging Face tokenizer.json (BPE model) run with the `tokenizers` library's
// semantics: added tokens first, then normalizer, pre-tokenizer, BPE, and the TemplateProcessing
// post-processor; decode runs the decoder chain. A Tokenizer owns all its parts; encode() and
// decode() are const and may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/added_vocabulary.h"
#include "text/bpe.h"
#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/pre_tokenizer.h"
#include "text/token_index.h"
#include "text/tokenizer_spec.h"

namespace staticlm {

struct TokenizerCacheEntry;  // tokenizer_cache.h

class Tokenizer {
 public:
  // Reads tokenizer.json at `path`. Bad files throw kInvalidFile, unsupported components
  // kUnsupported; the message names the file and the field. The built tables come from the
  // tokenizer cache when it holds this file's bytes (tokenizer_cache.h), and go into it when not.
  static std::unique_ptr<Tokenizer> load(const std::string& path);
  // Same from the file's text; `name` stands for the file in messages.
  static std::unique_ptr<Tokenizer> from_json(std::string_view json, const std::string& name);
  static std::unique_ptr<Tokenizer> from_spec(TokenizerSpec spec, const std::string& name);
  // From a tokenizer cache file's bytes for the tokenizer.json `json`; nullptr when they are not
  // an intact cache of it (tokenizer_cache.h).
  static std::unique_ptr<Tokenizer> from_cache(std::string_view bytes, std::string_view json, const std::string& name);

  // ids[n] of `text` (valid UTF-8; anything else throws kInvalidArgument). With
  // add_special_tokens the post-processor's tokens (e.g. <bos>) are added.
  // Without parse_special, special added tokens written in the text (a literal "<bos>") are
  // encoded as the text they are (llama-server's /tokenize parse_special: false).
  std::vector<int> encode(std::string_view text, bool add_special_tokens = false, bool parse_special = true) const;
  // encode() for a text that must fit `max_tokens` (a prompt and max_seq): nullopt when it has
  // more, found without encoding the rest of a long text (a 200 MB prompt would take minutes and
  // gigabytes to count exactly). `count` (when given) then holds the number of tokens: exact for
  // texts up to kExactCountBytes, else a lower bound.
  struct TokenCount {
    std::size_t tokens = 0;
    bool exact = false;
  };
  static constexpr std::size_t kExactCountBytes = 256 << 10;
  std::optional<std::vector<int>> encode_at_most(std::string_view text, std::size_t max_tokens,
                                                 bool add_special_tokens = false, TokenCount* count = nullptr) const;

  // Text of ids[n]. Ids outside the vocabulary throw kOutOfRange.
  std::string decode(std::span<const int> ids, bool skip_special_tokens = false) const;

  // The bytes token `id` adds to a text: a byte-fallback token's (<0xHH>) one byte, any other its
  // decode() alone. Ids outside the vocabulary throw kOutOfRange.
  std::string token_bytes(int id) const;

  int token_to_id(std::string_view token) const;  // -1 when absent
  // Token string of an id (an added token's content wins), or nullopt.
  std::optional<std::string_view> id_to_token(int id) const;
  bool is_special(int id) const;
  // One past the largest id.
  int id_limit() const { return id_limit_; }
  // Whether load() took the built tables from the tokenizer cache.
  bool from_cache() const { return from_cache_; }
  const std::string& name() const { return name_; }
  // The vocabulary as sorted bytes, for constrained generation; built on first use (thread-safe).
  const TokenIndex& token_index() const;

 private:
  Tokenizer() = default;
  // The Tokenizer of `spec`'s parts and `model` (built from spec.model when null).
  static std::unique_ptr<Tokenizer> from_parts(TokenizerSpec spec, std::unique_ptr<BpeModel> model, const std::string& name);
  static std::unique_ptr<Tokenizer> from_cache_entry(TokenizerCacheEntry entry, const std::string& name);
  // encode() that throws TooMany once the ids surely pass `limit`: a piece is first checked by
  // its length (BpeModel::max_bytes_per_token), then by its ids.
  struct TooMany {
    std::size_t at_least;
  };
  std::vector<int> encode_limited(std::string_view text, bool add_special_tokens, std::size_t limit,
                                  bool parse_special = true) const;
  void encode_text(std::string_view text, std::uint32_t offset, std::vector<int>& out, BpeScratch& scratch,
                   std::size_t limit,
                   bool parse_special) const;
  void encode_piece(std::string_view piece, std::vector<int>& out, BpeScratch& scratch, std::size_t limit) const;

  std::string name_;
  mutable std::once_flag index_once_;
  mutable std::unique_ptr<TokenIndex> index_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Normalizer> normalizer_;      // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer_;  // may be null
  std::unique_ptr<Decoder> decoder_;            // may be null: tokens joined by spaces
  std::unique_ptr<AddedVocabulary> added_;
  struct AddedToken {
    std::string content;
    std::string decoded;  // what decode() uses (the normalized form if normalized)
    bool special = false;
  };
  // The added tokens, and by id the index of an id's own (-1: not an added token). A slot per id,
  // not an entry: a few hundred added tokens among 262,144 ids (a vector of strings by id was
  // 16 MB to zero and free on every load).
  std::vector<AddedToken> added_tokens_;
  std::vector<std::int32_t> added_slot_;
  const AddedToken* added_token(int id) const {
    const std::int32_t s = added_slot_[static_cast<std::size_t>(id)];
    return s < 0 ? nullptr : &added_tokens_[static_cast<std::size_t>(s)];
  }
  struct AddedKeyOf {
    const Tokenizer* t;
    std::string_view operator()(int id) const { return t->added_token(id)->content; }
  };
  StringIdMap<AddedKeyOf> added_ids_{AddedKeyOf{this}};  // content -> id
  bool track_origins_ = false;  // only Metaspace with prepend_scheme "first" needs them
  bool has_template_ = false;
  TemplateSpec template_;
  int id_limit_ = 0;
  bool from_cache_ = false;
};

}  // namespace staticlm
