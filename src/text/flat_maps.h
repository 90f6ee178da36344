// Two small open-addressing hash tables the tokenizer looks up millions of times:
//   StringIdMap: token string -> id, for strings the caller owns and can find again by id;
//   PairMap: (left id, right id) -> merge rank.
// Linear probing, power-of-two capacity, at most half full. Both own only their slot arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace staticlm {

// Saved slots become a table's (`table`, its mask and size) when they form one: a power of two
// of at least 16 slots, at most half of them other than `empty` (so every probe ends), each of
// those passing `valid`. Else false, and the table is unchanged.
template <class Valid>
bool assign_table(std::vector<std::uint64_t> slots, std::uint64_t empty, Valid valid, std::vector<std::uint64_t>& table,
                  std::size_t& mask, std::size_t& size) {
  const std::size_t cap = slots.size();
  if (cap < 16 || (cap & (cap - 1)) != 0) return false;
  std::size_t used = 0;
  for (const std::uint64_t s : slots) {
    if (s == empty) continue;
    if (!valid(s)) return false;
    ++used;
  }
  if (used * 2 > cap) return false;
  table = std::move(slots);
  mask = cap - 1;
  size = used;
  return true;
}

// Keys are not stored: a slot holds the key's 32-bit hash and its id, and `key_of(id)` gives the
// key back for comparison, so a slot is 8 bytes and 262144 tokens fit in 4 MiB.
template <class KeyOf>
class StringIdMap {
 public:
  explicit StringIdMap(KeyOf key_of = KeyOf()) : key_of_(key_of) {}
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, 0);
    mask_ = cap - 1;
  }
  static std::uint64_t hash(std::string_view k) { return std::hash<std::string_view>{}(k); }
  // Inserts or overwrites; `id` must be >= 0 and key_of(id) must equal `key` from now on.
  void set(std::string_view key, int id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uint32_t h = static_cast<std::uint32_t>(hash(key));
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      std::uint64_t& s = slots_[i];
      if (s == 0) {
        s = pack(h, id);
        ++size_;
        return;
      }
      if (hash_of(s) == h && key_of_(id_of(s)) == key) {
        s = pack(h, id);
        return;
      }
    }
  }
  int get(std::string_view key) const { return get_hashed(key, hash(key)); }  // -1 when absent
  int get_hashed(std::string_view key, std::uint64_t full_hash) const {
    if (slots_.empty()) return -1;
    const std::uint32_t h = static_cast<std::uint32_t>(full_hash);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const std::uint64_t s = slots_[i];
      if (s == 0) return -1;
      if (hash_of(s) == h && key_of_(id_of(s)) == key) return id_of(s);
    }
  }
  // Hint that get_hashed(..., full_hash) comes soon.
  void prefetch(std::uint64_t full_hash) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[static_cast<std::uint32_t>(full_hash) & mask_]);
  }
  std::size_t size() const { return size_; }

  // The slots as they are, to save; assign_slots takes saved ones back (assign_table) when every
  // id passes `valid_id` (key_of must be able to give its key).
  const std::vector<std::uint64_t>& slots() const { return slots_; }
  template <class ValidId>
  bool assign_slots(std::vector<std::uint64_t> slots, ValidId valid_id) {
    return assign_table(std::move(slots), 0, [&](std::uint64_t s) { return valid_id(id_of(s)); }, slots_, mask_, size_);
  }

 private:
  static std::uint64_t pack(std::uint32_t h, int id) { return (std::uint64_t{h} << 32) | (static_cast<std::uint32_t>(id) + 1u); }
  static std::uint32_t hash_of(std::uint64_t s) { return static_cast<std::uint32_t>(s >> 32); }
  static int id_of(std::uint64_t s) { return static_cast<int>(static_cast<std::uint32_t>(s) - 1u); }
  void grow() {
    std::vector<std::uint64_t> old;
    old.swap(slots_);
    reserve(old.empty() ? 8 : old.size());
    size_ = 0;
    for (std::uint64_t s : old) {
      if (s != 0) set(key_of_(id_of(s)), id_of(s));
    }
  }
  KeyOf key_of_;
  std::vector<std::uint64_t> slots_;  // 0 = empty, else (hash << 32) | (id + 1)
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

// A slot packs the pair and its rank into 64 bits (21 + 21 + 22), so the 514906 Gemma merges
// take 8 MiB; the merged id is looked up by rank elsewhere.
class PairMap {
 public:
  static constexpr int kIdBits = 21;
  static constexpr int kRankBits = 22;
  static constexpr std::uint32_t kMaxId = (1u << kIdBits) - 2;  // all-ones marks an empty slot
  static constexpr std::uint32_t kMaxRank = (1u << kRankBits) - 1;
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, kEmpty);
    mask_ = cap - 1;
  }
  // Inserts or overwrites (a later duplicate merge wins, as in upstream's map). a, b <= kMaxId,
  // rank <= kMaxRank.
  void set(std::uint32_t a, std::uint32_t b, std::uint32_t rank) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uint64_t key = pack(a, b);
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      std::uint64_t& s = slots_[i];
      if (s == kEmpty) {
        s = key | rank;
        ++size_;
        return;
      }
      if ((s & kKeyMask) == key) {
        s = key | rank;
        return;
      }
    }
  }
  void prefetch(std::uint32_t a, std::uint32_t b) const { __builtin_prefetch(&slots_[hash(pack(a, b)) & mask_]); }
  // The rank of merging (a, b), or kNone.
  std::uint32_t get(std::uint32_t a, std::uint32_t b) const {
    const std::uint64_t key = pack(a, b);
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const std::uint64_t s = slots_[i];
      if ((s & kKeyMask) == key) return static_cast<std::uint32_t>(s & kMaxRank);
      if (s == kEmpty) return kNone;
    }
  }
  std::size_t size() const { return size_; }

  // As StringIdMap's: the slots to save, and saved ones taken back when their ids are below
  // `id_limit` and their ranks below `rank_limit`.
  const std::vector<std::uint64_t>& slots() const { return slots_; }
  bool assign_slots(std::vector<std::uint64_t> slots, std::uint32_t id_limit, std::uint32_t rank_limit) {
    const auto valid = [&](std::uint64_t s) {
      const auto a = static_cast<std::uint32_t>(s >> (kIdBits + kRankBits));
      const auto b = static_cast<std::uint32_t>((s >> kRankBits) & ((1u << kIdBits) - 1));
      return a < id_limit && b < id_limit && (s & kMaxRank) < rank_limit;
    };
    return assign_table(std::move(slots), kEmpty, valid, slots_, mask_, size_);
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static constexpr std::uint64_t kKeyMask = ~std::uint64_t{kMaxRank};
  static std::uint64_t pack(std::uint32_t a, std::uint32_t b) {
    return (std::uint64_t{a} << (kIdBits + kRankBits)) | (std::uint64_t{b} << kRankBits);
  }
  static std::uint64_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  void grow() {
    std::vector<std::uint64_t> old;
    old.swap(slots_);
    reserve(old.empty() ? 8 : old.size());
    size_ = 0;
    for (std::uint64_t s : old) {
      if (s != kEmpty) {
        set(static_cast<std::uint32_t>(s >> (kIdBits + kRankBits)),
            static_cast<std::uint32_t>((s >> kRankBits) & ((1u << kIdBits) - 1)), static_cast<std::uint32_t>(s & kMaxRank));
      }
    }
  }
  std::vector<std::uint64_t> slots_{16, kEmpty};
  std::size_t mask_ = 15;
  std::size_t size_ = 0;
};

}  // namespace staticlm
