// ByteWriter / ByteReader: plain values and arrays in a byte string, in this machine's byte order,
// for files this program writes and reads back itself (caches). The reader checks every size
// against what is left and throws ByteReader::Short past the end, so a damaged or crafted file
// is refused instead of read out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace staticlm {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(std::string_view s) {
    put<std::uint64_t>(s.size());
    bytes_.append(s);
  }
  // The count, zero bytes up to a multiple of 8 (so that arrays keep their alignment when the
  // bytes are mapped), the elements.
  template <class T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 8);
    put<std::uint64_t>(v.size());
    bytes_.append((8 - bytes_.size() % 8) % 8, '\0');
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class ByteReader {
 public:
  struct Short {};  // thrown when the bytes end before a value does

  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof v).data(), sizeof v);
    return v;
  }
  bool get_bool() {
    const auto b = get<std::uint8_t>();
    if (b > 1) throw Short{};
    return b == 1;
  }
  std::string get_string() { return std::string(take(count(1))); }
  template <class T>
  std::vector<T> get_vector() {
    static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= 8);
    const auto n = get<std::uint64_t>();
    take((8 - at_ % 8) % 8);
    if (n > left() / sizeof(T)) throw Short{};
    const char* p = take(n * sizeof(T)).data();
    if (reinterpret_cast<std::uintptr_t>(p) % alignof(T) == 0) {  // one pass, no zeroing first
      const T* t = reinterpret_cast<const T*>(p);
      return std::vector<T>(t, t + n);
    }
    std::vector<T> v(n);
    if (n != 0) std::memcpy(v.data(), p, n * sizeof(T));
    return v;
  }
  template <class T, std::size_t N>
  void get_into(T (&a)[N]) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(a, take(sizeof a).data(), sizeof a);
  }
  std::size_t left() const { return bytes_.size() - at_; }

 private:
  // A count of elements of `size` bytes that the rest of the bytes can hold.
  std::uint64_t count(std::size_t size) {
    const auto n = get<std::uint64_t>();
    if (n > left() / size) throw Short{};
    return n;
  }
  std::string_view take(std::size_t n) {
    if (n > left()) throw Short{};
    const std::string_view s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

}  // namespace staticlm
