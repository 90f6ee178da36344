#include "text/token_index.h"

#include <algorithm>
#include <cstdio>
#include <span>

#include "base/error.h"
#include "text/tokenizer.h"

namespace staticlm {

TokenIndex TokenIndex::build(const Tokenizer& tok) {
  TokenIndex x;
  const int n = tok.id_limit();
  x.bytes.resize(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) {
    if (tok.is_special(id)) continue;
    const std::optional<std::string_view> piece = tok.id_to_token(id);
    if (!piece) continue;
    unsigned byte = 0;
    std::string& out = x.bytes[static_cast<std::size_t>(id)];
    if (piece->size() == 6 && piece->starts_with("<0x") && piece->ends_with(">") &&
        std::sscanf(std::string(*piece).c_str(), "<0x%2x>", &byte) == 1) {
      out.assign(1, static_cast<char>(byte));
    } else {
      try {
        out = tok.decode(std::span<const int>(&id, 1));
      } catch (const Error&) {
        out.clear();
      }
    }
    if (!out.empty()) x.sorted.push_back(id);
  }
  x.string_safe.assign(static_cast<std::size_t>(n), 0);
  x.chars.assign(static_cast<std::size_t>(n), 0);
  for (std::int32_t id : x.sorted) {
    const std::string& s = x.bytes[static_cast<std::size_t>(id)];
    bool safe = true;
    std::uint32_t chars = 0;
    for (std::size_t i = 0; i < s.size() && safe;) {
      const auto c = static_cast<unsigned char>(s[i]);
      const std::size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
      safe = len > 0 && c >= 0x20 && c != '"' && c != '\\' && i + len <= s.size();
      for (std::size_t k = 1; safe && k < len; ++k) safe = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      i += len;
      ++chars;
    }
    x.string_safe[static_cast<std::size_t>(id)] = safe;
    x.chars[static_cast<std::size_t>(id)] = chars;
  }
  std::sort(x.sorted.begin(), x.sorted.end(), [&](std::int32_t a, std::int32_t b) {
    return x.bytes[static_cast<std::size_t>(a)] < x.bytes[static_cast<std::size_t>(b)];
  });
  x.lcp.resize(x.sorted.size());
  for (std::size_t i = 0; i < x.sorted.size(); ++i) {
    const std::string& s = x.bytes[static_cast<std::size_t>(x.sorted[i])];
    x.max_bytes = std::max(x.max_bytes, s.size());
    if (i == 0) continue;
    const std::string& p = x.bytes[static_cast<std::size_t>(x.sorted[i - 1])];
    const auto m = std::mismatch(s.begin(), s.end(), p.begin(), p.end());
    x.lcp[i] = static_cast<std::uint32_t>(m.first - s.begin());
  }
  return x;
}

}  // namespace staticlm
