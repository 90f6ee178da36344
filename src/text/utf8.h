// UTF-8 helpers for the text side: validation, decoding one code point, encoding one.
// Everything works on std::string / std::string_view holding bytes; nothing here owns memory
// beyond the strings it returns.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace staticlm {

// Byte offset of the first byte that does not start a well-formed UTF-8 sequence (overlong
// forms, surrogates and code points past U+10FFFF are ill-formed), or npos when all is valid.
std::size_t utf8_first_invalid(std::string_view s);

inline bool is_valid_utf8(std::string_view s) { return utf8_first_invalid(s) == std::string_view::npos; }

// s with each maximal ill-formed subsequence replaced by U+FFFD (Rust's String::from_utf8_lossy).
std::string utf8_lossy(std::string_view s);

// Length of the sequence that starts with this lead byte (1 for bytes that cannot lead).
inline int utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

// Decodes the code point at s[pos] and advances pos past it. The input should be valid UTF-8;
// a sequence cut short by the end of s decodes as U+FFFD (one byte consumed) instead of
// reading past the end.
inline char32_t utf8_decode(std::string_view s, std::size_t& pos) {
  const auto c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80) {
    ++pos;
    return c;
  }
  const int len = utf8_sequence_length(c);
  if (pos + static_cast<std::size_t>(len) > s.size()) {
    ++pos;
    return 0xFFFD;
  }
  char32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + k]) & 0x3F);
  pos += len;
  return cp;
}

// Appends the UTF-8 encoding of c.
void utf8_append(std::string& out, char32_t c);

// Number of code points in valid UTF-8.
std::size_t utf8_length(std::string_view s);

}  // namespace staticlm
