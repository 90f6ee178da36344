// Helpers for the safetensors tests: building files byte by byte and checking error messages.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"

namespace staticlm::test {

// The 8-byte little-endian length of `header`, then `header`, then `data`: a safetensors file
// exactly as given (no padding added).
inline std::string st_bytes(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Little-endian u64 at the start of a file's bytes: its header length.
inline std::uint64_t header_length(const std::string& bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return n;
}

// Passes when f throws an Error of `kind` whose message starts with `prefix` and contains every
// string in `parts`.
template <typename F>
::testing::AssertionResult fails_with(F&& f, ErrorKind kind, const std::string& prefix,
                                      const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string m = e.what();
    if (e.kind() != kind)
      return ::testing::AssertionFailure() << "kind " << error_kind_name(e.kind()) << ", expected "
                                           << error_kind_name(kind) << ": " << m;
    if (m.rfind(prefix, 0) != 0) return ::testing::AssertionFailure() << "message does not start with " << prefix << ": " << m;
    for (const auto& p : parts)
      if (m.find(p) == std::string::npos) return ::testing::AssertionFailure() << "message lacks '" << p << "': " << m;
    if (m.find('\n') != std::string::npos) return ::testing::AssertionFailure() << "message spans lines: " << m;
    return ::testing::AssertionSuccess() << m;
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-staticlm exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

}  // namespace staticlm::test
