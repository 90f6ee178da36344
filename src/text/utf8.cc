#include "text/utf8.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace staticlm {

namespace {

// The UTF-8 sequence at p[i]: its length when well formed; else minus the length of its maximal
// subpart (the bytes that start a well-formed sequence before it breaks off; at least 1), which
// Unicode's recommended practice, and Rust's from_utf8_lossy, replace by one U+FFFD.
int sequence_at(const unsigned char* p, std::size_t n, std::size_t i) {
  const unsigned char c = p[i];
  if (c < 0x80) return 1;
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte (rules out overlongs)
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return -1;
  }
  if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return -1;
  for (int k = 2; k < len; ++k) {
    if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return -k;
  }
  return len;
}

}  // namespace

std::size_t utf8_first_invalid(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII runs eight bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const int len = sequence_at(p, n, i);
    if (len < 0) return i;
    i += static_cast<std::size_t>(len);
  }
  return std::string_view::npos;
}

std::string utf8_lossy(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const int len = sequence_at(p, s.size(), i);
    if (len > 0) {
      out.append(s.substr(i, static_cast<std::size_t>(len)));
      i += static_cast<std::size_t>(len);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<std::size_t>(-len);
    }
  }
  return out;
}

void utf8_append(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::size_t utf8_length(std::string_view s) {
  std::size_t count = 0;
  for (char c : s) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

}  // namespace staticlm
