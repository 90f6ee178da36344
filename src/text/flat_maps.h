// Two small open-addressing hash tables the tokenizer looks up millions of times:
//   StringIdMap: token string -> id, over strings the caller keeps alive (string_view keys);
//   PairMap: (left id, right id) -> (merge rank, merged id).
// Linear probing, power-of-two capacity, at most half full. Both own only their slot arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace staticlm {

class StringIdMap {
 public:
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }
  // Inserts or overwrites. The string must outlive the map.
  void set(std::string_view key, int id) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uint64_t h = hash(key);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.id < 0) {
        s = Slot{key.data(), static_cast<std::uint32_t>(key.size()), static_cast<std::uint32_t>(h), id};
        ++size_;
        return;
      }
      if (s.hash == static_cast<std::uint32_t>(h) && view(s) == key) {
        s.id = id;
        return;
      }
    }
  }
  int get(std::string_view key) const {  // -1 when absent
    if (slots_.empty()) return -1;
    const std::uint64_t h = hash(key);
    for (std::size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == static_cast<std::uint32_t>(h) && view(s) == key) return s.id;
    }
  }
  std::size_t size() const { return size_; }

 private:
  struct Slot {
    const char* data = nullptr;
    std::uint32_t len = 0;
    std::uint32_t hash = 0;
    int id = -1;
  };
  static std::string_view view(const Slot& s) { return {s.data, s.len}; }
  static std::uint64_t hash(std::string_view k) { return std::hash<std::string_view>{}(k); }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    reserve(old.empty() ? 8 : old.size());
    size_ = 0;
    for (const Slot& s : old) {
      if (s.id >= 0) set(view(s), s.id);
    }
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

class PairMap {
 public:
  struct Value {
    std::uint32_t rank;
    std::int32_t id;
  };
  void reserve(std::size_t n) {
    std::size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, {0, -1}});
    mask_ = cap - 1;
  }
  // Inserts or overwrites (a later duplicate merge wins, as in upstream's map).
  void set(std::uint32_t a, std::uint32_t b, Value v) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const std::uint64_t key = pack(a, b);
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == kEmpty) {
        s = Slot{key, v};
        ++size_;
        return;
      }
      if (s.key == key) {
        s.value = v;
        return;
      }
    }
  }
  const Value* get(std::uint32_t a, std::uint32_t b) const {
    if (slots_.empty()) return nullptr;
    const std::uint64_t key = pack(a, b);
    for (std::size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  struct Slot {
    std::uint64_t key;
    Value value;
  };
  static std::uint64_t pack(std::uint32_t a, std::uint32_t b) { return (std::uint64_t{a} << 32) | b; }
  static std::uint64_t hash(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    reserve(old.empty() ? 8 : old.size());
    size_ = 0;
    for (const Slot& s : old) {
      if (s.key != kEmpty) set(static_cast<std::uint32_t>(s.key >> 32), static_cast<std::uint32_t>(s.key), s.value);
    }
  }
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace staticlm
