#include "base/base64.h"

#include "base/error.h"

namespace staticlm {

namespace {

int sextet(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::vector<std::uint8_t> base64_decode(std::string_view text, const std::string& what) {
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t acc = 0;
  int held = 0;     // sextets in acc
  int padding = 0;  // '=' seen; only more '=' (or whitespace) may follow
  std::size_t symbols = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    ++symbols;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int v = sextet(c);
    if (v < 0 || padding) {
      invalid_argument(what + ": not base64 at offset " + std::to_string(i) +
                       (padding ? " (data after '=' padding)" : " (a character outside A-Z a-z 0-9 + /)"));
    }
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    if (++held == 4) {
      out.push_back(static_cast<std::uint8_t>(acc >> 16));
      out.push_back(static_cast<std::uint8_t>(acc >> 8));
      out.push_back(static_cast<std::uint8_t>(acc));
      acc = 0;
      held = 0;
    }
  }
  // A final group of 2 or 3 sextets carries 1 or 2 bytes; 1 sextet cannot end a valid text, and
  // padding (when present) must complete the group of 4.
  if (held == 1 || (padding && held + padding != 4) || padding > 2) {
    invalid_argument(what + ": not base64 (" + std::to_string(symbols) + " symbols do not make whole 4-symbol groups)");
  }
  if (held == 2) out.push_back(static_cast<std::uint8_t>(acc >> 4));
  if (held == 3) {
    out.push_back(static_cast<std::uint8_t>(acc >> 10));
    out.push_back(static_cast<std::uint8_t>(acc >> 2));
  }
  return out;
}

}  // namespace staticlm
