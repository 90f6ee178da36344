// SHA-256 (FIPS 180-4) of a byte string, as a lowercase hex digest. Used to fingerprint fixed
// tensors (the canonical image position ids of a static vision profile) the way Python's
// hashlib.sha256(tensor.numpy().tobytes()).hexdigest() does. No ownership: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace staticlm {

// Incremental hasher: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  // Finishes the hash; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> digest();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_;
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// Lowercase hex digest of the bytes.
std::string sha256_hex(std::span<const std::uint8_t> bytes);
std::string sha256_hex(std::string_view text);

}  // namespace staticlm
