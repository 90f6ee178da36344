#include "text/byte_level.h"

#include <array>
#include <optional>
#include <vector>

#include "text/utf8.h"

namespace staticlm {
namespace {

bool stands_for_itself(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

// 256 bytes, 68 of them moved to U+0100..U+0143: every character of the map is below U+0144.
constexpr char32_t kMapEnd = 0x144;

struct Tables {
  std::array<std::string, 256> utf8;  // the character that spells each byte, as UTF-8
  std::array<int, kMapEnd> byte{};  // -1: not in the map
  Tables() {
    byte.fill(-1);
    char32_t next = 0x100;
    for (unsigned b = 0; b < 256; ++b) {
      const char32_t c = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
      utf8_append(utf8[b], c);
      byte[c] = static_cast<int>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// The byte that character c spells, or nothing for a character outside the map.
std::optional<unsigned char> byte_level_byte(char32_t c) {
  if (c >= kMapEnd || tables().byte[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(tables().byte[c]);
}

}  // namespace

void byte_level_spell(NormalizedText& t) {
  const Tables& tab = tables();
  std::string text;
  text.reserve(t.text.size() * 2);
  std::vector<std::uint32_t> origin;
  if (t.tracked()) origin.reserve(t.text.size() * 2);
  for (std::size_t i = 0; i < t.text.size(); ++i) {
    const std::string& s = tab.utf8[static_cast<unsigned char>(t.text[i])];
    text += s;
    if (t.tracked()) origin.insert(origin.end(), s.size(), t.origin[i]);
  }
  t.text = std::move(text);
  t.origin = std::move(origin);
}

std::string byte_level_unspell(std::string_view token) {
  std::string bytes;
  bytes.reserve(token.size());
  for (std::size_t p = 0; p < token.size();) {
    const std::optional<unsigned char> b = byte_level_byte(utf8_decode(token, p));
    if (!b) return std::string(token);  // a character outside the map: the token as it is
    bytes.push_back(static_cast<char>(*b));
  }
  return bytes;
}

}  // namespace staticlm
