#include "text/token_index.h"

#include <algorithm>
#include <span>

#include "base/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace staticlm {

TokenIndex TokenIndex::build(const Tokenizer& tok) {
  TokenIndex x;
  const int n = tok.id_limit();
  x.bytes.resize(static_cast<std::size_t>(n));
  for (int id = 0; id < n; ++id) {
    if (tok.is_special(id)) continue;
    if (!tok.id_to_token(id)) continue;
    std::string& out = x.bytes[static_cast<std::size_t>(id)];
    try {
      out = tok.token_bytes(id);
    } catch (const Error&) {
      out.clear();
    }
    if (!out.empty()) x.sorted.push_back(id);
  }
  x.string_safe.assign(static_cast<std::size_t>(n), 0);
  x.chars.assign(static_cast<std::size_t>(n), 0);
  for (std::int32_t id : x.sorted) {
    const std::string& s = x.bytes[static_cast<std::size_t>(id)];
    // Well-formed UTF-8 (as the JSON matcher takes inside strings) with nothing to escape.
    const bool safe = is_valid_utf8(s) && std::none_of(s.begin(), s.end(), [](char ch) {
                        const auto c = static_cast<unsigned char>(ch);
                        return c < 0x20 || c == '"' || c == '\\';
                      });
    x.string_safe[static_cast<std::size_t>(id)] = safe;
    x.chars[static_cast<std::size_t>(id)] = safe ? static_cast<std::uint32_t>(utf8_length(s)) : 0;
  }
  std::sort(x.sorted.begin(), x.sorted.end(), [&](std::int32_t a, std::int32_t b) {
    return x.bytes[static_cast<std::size_t>(a)] < x.bytes[static_cast<std::size_t>(b)];
  });
  x.lcp.resize(x.sorted.size());
  x.sorted_at.assign(1, 0);
  for (std::size_t i = 0; i < x.sorted.size(); ++i) {
    const std::string& s = x.bytes[static_cast<std::size_t>(x.sorted[i])];
    x.sorted_text += s;
    x.sorted_at.push_back(static_cast<std::uint32_t>(x.sorted_text.size()));
    x.max_bytes = std::max(x.max_bytes, s.size());
    if (i == 0) continue;
    const std::string& p = x.bytes[static_cast<std::size_t>(x.sorted[i - 1])];
    const auto m = std::mismatch(s.begin(), s.end(), p.begin(), p.end());
    x.lcp[i] = static_cast<std::uint32_t>(m.first - s.begin());
  }
  return x;
}

}  // namespace staticlm
