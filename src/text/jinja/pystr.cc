#include "text/jinja/pystr.h"

#include <utf8proc.h>

#include "text/jinja/limits.h"
#include "text/jinja/value.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace staticlm::jinja::py {

bool is_space(char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (std::size_t p = 0; p < s.size();) out += utf8_decode(s, p);
  return out;
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) utf8_append(out, c);
  return out;
}

std::string strip(std::string_view s, bool left, bool right, const std::optional<std::string>& chars) {
  const std::u32string u = decode(s);
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  auto drop = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_space(c); };
  std::size_t b = 0, e = u.size();
  if (left) {
    while (b < e && drop(u[b])) ++b;
  }
  if (right) {
    while (e > b && drop(u[e - 1])) --e;
  }
  return encode(std::u32string_view(u).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) fail("split: empty separator");
    if (!from_right) {
      std::size_t pos = 0;
      while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
        const std::size_t at = s.find(*sep, pos);
        if (at == std::string_view::npos) break;
        out.emplace_back(s.substr(pos, at - pos));
        pos = at + sep->size();
      }
      out.emplace_back(s.substr(pos));
      return out;
    }
    std::size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit < 0 || static_cast<std::int64_t>(rev.size()) < maxsplit) {
      if (end < sep->size()) break;
      const std::size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      rev.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    rev.emplace_back(s.substr(0, end));
    return {rev.rbegin(), rev.rend()};
  }
  const std::u32string u = decode(s);
  if (!from_right) {
    std::size_t i = 0;
    while (true) {
      while (i < u.size() && is_space(u[i])) ++i;
      if (i == u.size()) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
        out.push_back(encode(std::u32string_view(u).substr(i)));  // the rest as it is
        break;
      }
      std::size_t j = i;
      while (j < u.size() && !is_space(u[j])) ++j;
      out.push_back(encode(std::u32string_view(u).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  std::size_t i = u.size();
  while (true) {
    while (i > 0 && is_space(u[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(u).substr(0, i)));  // the rest as it is
      break;
    }
    std::size_t j = i;
    while (j > 0 && !is_space(u[j - 1])) --j;
    out.push_back(encode(std::u32string_view(u).substr(j, i - j)));
    i = j;
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string u = decode(s);
  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  while (i < u.size()) {
    const char32_t c = u[i];
    const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                     c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) {
      ++i;
      continue;
    }
    const std::size_t end = i + ((c == '\r' && i + 1 < u.size() && u[i + 1] == '\n') ? 2 : 1);
    out.push_back(encode(std::u32string_view(u).substr(start, (keepends ? end : i) - start)));
    i = start = end;
  }
  if (start < u.size()) out.push_back(encode(std::u32string_view(u).substr(start)));
  return out;
}

namespace {
char32_t to_upper(char32_t c) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))); }
char32_t to_lower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t to_title(char32_t c) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))); }
bool is_cased(char32_t c) { return to_upper(c) != c || to_lower(c) != c || utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_LT; }
}  // namespace

std::string upper(std::string_view s) {
  std::u32string u = decode(s);
  for (char32_t& c : u) c = to_upper(c);
  return encode(u);
}

std::string lower(std::string_view s) {
  std::u32string u = decode(s);
  for (char32_t& c : u) c = to_lower(c);
  return encode(u);
}

std::string capitalize(std::string_view s) {
  std::u32string u = decode(s);
  for (std::size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? to_title(u[i]) : to_lower(u[i]);
  return encode(u);
}

std::string title(std::string_view s) {
  std::u32string u = decode(s);
  bool prev_cased = false;
  for (char32_t& c : u) {
    const bool cased = is_cased(c);
    c = prev_cased ? to_lower(c) : to_title(c);
    prev_cased = cased;
  }
  return encode(u);
}

std::string replace(std::string_view s, std::string_view old, std::string_view now, std::int64_t count) {
  std::string out;
  if (old.empty()) {
    const std::u32string u = decode(s);
    std::int64_t n = 0;
    for (std::size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || n < count) {
        out += now;
        ++n;
      }
      if (i < u.size()) utf8_append(out, u[i]);
      check_string_size(out.size(), "replace", 0);
    }
    return out;
  }
  std::size_t pos = 0;
  std::int64_t n = 0;
  while (count < 0 || n < count) {
    const std::size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos));
    out.append(now);
    check_string_size(out.size(), "replace", 0);
    pos = at + old.size();
    ++n;
  }
  out.append(s.substr(pos));
  return out;
}

std::int64_t find(std::string_view s, std::string_view sub, bool from_right) {
  const std::size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<std::int64_t>(utf8_length(s.substr(0, at)));
}

std::int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<std::int64_t>(utf8_length(s)) + 1;
  std::int64_t n = 0;
  for (std::size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size())) ++n;
  return n;
}

std::string center(std::string_view s, std::int64_t width, std::string_view fill) {
  check_width(width, "center");
  const auto len = static_cast<std::int64_t>(utf8_length(s));
  if (width <= len) return std::string(s);
  const std::int64_t pad = width - len;
  const std::int64_t left = pad / 2 + (pad & width & 1);
  return repeat(fill, left) + std::string(s) + repeat(fill, pad - left);
}

std::string repeat(std::string_view s, std::int64_t n) {
  std::string out;
  for (std::int64_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace staticlm::jinja::py
