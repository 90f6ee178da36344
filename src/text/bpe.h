// BpeModel: the tokenizer.json "model" of type BPE, with the `tokenizers` library's semantics:
// a piece starts as one symbol per character (a character missing from the vocabulary becomes
// its <0xXX> byte tokens with byte_fallback, else the unk token, fused when fuse_unk), then the
// adjacent pair with the lowest merge rank is merged, leftmost first, until no pair merges.
// Owns the vocabulary and merge table; encode() is const and thread-safe given its own scratch.
//
// Speed without changing a result: a merge can only join two symbols if some merge's left part
// ends, and right part starts, with the two characters at the join. The loader records which
// characters some merge joins to a following U+2581 (crossing_); before any other U+2581 that
// follows a known character nothing ever merges, so the piece is cut there and the parts are
// merged on their own (short ones by a linear scan, long ones with a heap; repeats from a cache).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_stream.h"
#include "text/flat_maps.h"
#include "text/tokenizer_spec.h"

namespace staticlm {

// Working memory for BpeModel::encode, reused across pieces by one caller.
struct BpeScratch {
  struct Symbol {
    int id;
    int prev, next;  // neighbours, -1 at the ends
    bool alive;
  };
  struct Candidate {
    std::uint32_t rank, pos;
    int left, right;  // ids the pair had when queued; a changed pair is stale
  };
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::vector<std::uint32_t> ranks;     // of the initial adjacent pairs

  // A memo of short segments' ids, made once a caller has encoded enough text for it to pay
  // off. Direct-mapped; a slot holds the segment's bytes and ids.
  struct CacheSlot {
    std::uint8_t key_size = 0xFF;  // 0xFF: empty
    std::uint8_t id_count = 0;
    char key[30];
    std::int32_t ids[15];
  };
  static constexpr std::size_t kCacheSlots = 4096;
  std::vector<CacheSlot> cache;
  std::size_t bytes_seen = 0;
};

class BpeModel {
 public:
  // Takes the vocabulary and merges out of `spec`. `where` names the file for errors (a merge
  // that names a token missing from the vocabulary, an id given twice, ...).
  static std::unique_ptr<BpeModel> create(BpeSpec&& spec, const std::string& where);

  // The built tables, for the tokenizer cache (tokenizer_cache.h), and back. restore() checks
  // every offset, id and table, so that a damaged or crafted file cannot make encode() read out
  // of bounds: nullptr when they do not hold (ByteReader::Short when the bytes end early).
  void save(ByteWriter& w) const;
  static std::unique_ptr<BpeModel> restore(ByteReader& r);

  // Appends the ids of one pre-tokenized piece (valid UTF-8). Throws kInvalidFile when a
  // character needs an unk_token that the vocabulary does not have.
  void encode(std::string_view piece, std::vector<int>& out, BpeScratch& scratch) const;

  int token_to_id(std::string_view token) const { return vocab_.get(token); }  // -1 if absent
  bool has_id(int id) const { return id >= 0 && id < id_limit() && id_str_[id].offset != kNoId; }
  // Token string of an id that has_id().
  std::string_view token(int id) const { return std::string_view(arena_).substr(id_str_[id].offset, id_str_[id].size); }
  // One past the largest id in the vocabulary.
  int id_limit() const { return static_cast<int>(id_str_.size()); }
  std::size_t merge_count() const { return merged_.size(); }
  // The most bytes of a piece one token can stand for; 0 when there is no such bound (characters
  // without a token are dropped, or a fused unk stands for a whole run of them).
  std::size_t max_bytes_per_token() const { return max_bytes_per_token_; }

 private:
  static constexpr std::uint32_t kNoId = 0xFFFFFFFFu;
  struct KeyOf {
    const BpeModel* model;
    std::string_view operator()(int id) const { return model->token(id); }
  };
  BpeModel() = default;
  void build_merges(const BpeSpec& spec, const std::string& where);
  int char_id(char32_t c, std::string_view utf8) const;
  static constexpr std::size_t kShortSegment = 32;
  void encode_segment(std::string_view text, std::vector<int>& out, BpeScratch& s) const;
  void merge_segment(BpeScratch& s, std::size_t lo, std::size_t hi) const;
  void merge_short(BpeScratch& s, std::size_t lo, std::size_t hi) const;

  std::string arena_;                     // all token strings, by id
  std::vector<BpeSpec::Str> id_str_;      // id -> its string in arena_; offset kNoId if none
  StringIdMap<KeyOf> vocab_{KeyOf{this}};
  PairMap merges_;                        // (left, right) -> rank
  std::vector<int> merged_;               // rank -> merged id
  std::vector<int> bmp_ids_;              // single-character tokens below U+10000, -1 if none
  int byte_ids_[256];                     // <0xXX> tokens, -1 if none
  std::optional<std::string> unk_token_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  // No merge joins a character outside crossing_ (other than U+2581) to a following U+2581.
  bool can_cut_ = false;
  std::vector<char32_t> crossing_;  // sorted
  std::size_t max_bytes_per_token_ = 0;
};

}  // namespace staticlm
