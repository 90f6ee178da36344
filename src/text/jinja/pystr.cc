#include "text/jinja/pystr.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

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

// Appends one part of a split, refusing the list once it passes the item limit (a 33 MB
// string of separators made 2.4 GB of parts before the limit was checked on the whole list).
void add_part(std::vector<std::string>& parts, std::string_view part) {
  check_list_items(parts.size() + 1, "split");
  parts.emplace_back(part);
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
        add_part(out, s.substr(pos, at - pos));
        pos = at + sep->size();
      }
      add_part(out, s.substr(pos));
      return out;
    }
    std::size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit < 0 || static_cast<std::int64_t>(rev.size()) < maxsplit) {
      if (end < sep->size()) break;
      const std::size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      add_part(rev, s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    add_part(rev, s.substr(0, end));
    return {rev.rbegin(), rev.rend()};
  }
  const std::u32string u = decode(s);
  if (!from_right) {
    std::size_t i = 0;
    while (true) {
      while (i < u.size() && is_space(u[i])) ++i;
      if (i == u.size()) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
        add_part(out, encode(std::u32string_view(u).substr(i)));  // the rest as it is
        break;
      }
      std::size_t j = i;
      while (j < u.size() && !is_space(u[j])) ++j;
      add_part(out, encode(std::u32string_view(u).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  std::size_t i = u.size();
  while (true) {
    while (i > 0 && is_space(u[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
      add_part(out, encode(std::u32string_view(u).substr(0, i)));  // the rest as it is
      break;
    }
    std::size_t j = i;
    while (j > 0 && !is_space(u[j - 1])) --j;
    add_part(out, encode(std::u32string_view(u).substr(j, i - j)));
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
    add_part(out, encode(std::u32string_view(u).substr(start, (keepends ? end : i) - start)));
    i = start = end;
  }
  if (start < u.size()) add_part(out, encode(std::u32string_view(u).substr(start)));
  return out;
}

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

namespace {

struct CodeRange {
  char32_t first, last;
};
#include "text/jinja/numeric_chars.inc"

template <std::size_t N>
bool in_ranges(const CodeRange (&ranges)[N], char32_t c) {
  const auto* it = std::lower_bound(std::begin(ranges), std::end(ranges), c,
                                    [](const CodeRange& r, char32_t x) { return r.last < x; });
  return it != std::end(ranges) && it->first <= c;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

}  // namespace

bool is_alpha(char32_t c) {
  switch (category(c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool is_decimal(char32_t c) { return category(c) == UTF8PROC_CATEGORY_ND; }

bool is_digit(char32_t c) { return is_decimal(c) || in_ranges(kDigitNotDecimal, c); }

bool is_numeric(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO ||
         in_ranges(kNumericNotNumber, c);
}

bool is_alnum(char32_t c) { return is_alpha(c) || is_numeric(c); }

bool is_word(char32_t c) { return c == '_' || is_alnum(c); }

namespace {
char32_t to_upper(char32_t c) { return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c))); }
char32_t to_lower(char32_t c) { return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))); }
char32_t to_title(char32_t c) { return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))); }
bool is_title_case(char32_t c) { return category(c) == UTF8PROC_CATEGORY_LT; }
// Python's isupper / islower per character: the letter categories, and the other characters
// with a case mapping (circled letters, ...), as Other_Uppercase / Other_Lowercase count them.
bool is_upper_case(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_LU || (k != UTF8PROC_CATEGORY_LL && k != UTF8PROC_CATEGORY_LT && to_lower(c) != c);
}
bool is_lower_case(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_LL || (k != UTF8PROC_CATEGORY_LU && k != UTF8PROC_CATEGORY_LT && to_upper(c) != c);
}
bool is_cased(char32_t c) { return is_upper_case(c) || is_lower_case(c) || is_title_case(c); }
// Unicode's Case_Ignorable (for the final sigma): marks, format characters, modifier letters and
// symbols, and the apostrophes and dots that may sit inside a word.
bool is_case_ignorable(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
         k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK || c == '\'' || c == '.' || c == ':' || c == '^' ||
         c == '`' || c == 0xB7 || c == 0x387 || c == 0x5F4 || c == 0x2018 || c == 0x2019 || c == 0x2024 ||
         c == 0x2027 || c == 0xFE13 || c == 0xFE52 || c == 0xFE55 || c == 0xFF07 || c == 0xFF0E || c == 0xFF1A;
}

struct SpecialCase {
  char32_t c;
  const char32_t* upper;
  const char32_t* lower;
  const char32_t* title;
};
constexpr SpecialCase kSpecialCasing[] = {
#include "text/jinja/special_casing.inc"
};
const SpecialCase* special(char32_t c) {
  const auto* end = std::end(kSpecialCasing);
  const auto* it = std::lower_bound(std::begin(kSpecialCasing), end, c, [](const SpecialCase& e, char32_t x) { return e.c < x; });
  return it != end && it->c == c ? it : nullptr;
}

// Full case mappings, as Python's str methods apply them ("ß".upper() == "SS").
void append_upper(std::u32string& out, char32_t c) {
  if (const SpecialCase* e = special(c)) out += e->upper;
  else out += to_upper(c);
}
void append_title(std::u32string& out, char32_t c) {
  if (const SpecialCase* e = special(c)) out += e->title;
  else out += to_title(c);
}
// u[i] in lower case; a capital sigma ending a word (a cased letter before it, none after it,
// case-ignorable characters skipped) is the final form, as Python's str.lower does.
void append_lower(std::u32string& out, const std::u32string& u, std::size_t i) {
  const char32_t c = u[i];
  if (c == 0x3A3) {
    std::size_t j = i;
    while (j > 0 && is_case_ignorable(u[j - 1])) --j;
    const bool after_cased = j > 0 && is_cased(u[j - 1]);
    std::size_t k = i + 1;
    while (k < u.size() && is_case_ignorable(u[k])) ++k;
    const bool before_cased = k < u.size() && is_cased(u[k]);
    out += after_cased && !before_cased ? char32_t{0x3C2} : char32_t{0x3C3};
    return;
  }
  if (const SpecialCase* e = special(c)) out += e->lower;
  else out += to_lower(c);
}
}  // namespace

std::string upper(std::string_view s) {
  std::u32string out;
  for (const char32_t c : decode(s)) append_upper(out, c);
  return encode(out);
}

std::string lower(std::string_view s) {
  const std::u32string u = decode(s);
  std::u32string out;
  for (std::size_t i = 0; i < u.size(); ++i) append_lower(out, u, i);
  return encode(out);
}

std::string capitalize(std::string_view s) {
  const std::u32string u = decode(s);
  std::u32string out;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (i == 0) append_title(out, u[i]);
    else append_lower(out, u, i);
  }
  return encode(out);
}

std::string title(std::string_view s) {
  const std::u32string u = decode(s);
  std::u32string out;
  bool prev_cased = false;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (prev_cased) append_lower(out, u, i);
    else append_title(out, u[i]);
    prev_cased = is_cased(u[i]);
  }
  return encode(out);
}

std::string swapcase(std::string_view s) {
  const std::u32string u = decode(s);
  std::u32string out;
  for (std::size_t i = 0; i < u.size(); ++i) {
    if (is_upper_case(u[i])) append_lower(out, u, i);
    else if (is_lower_case(u[i])) append_upper(out, u[i]);
    else out += u[i];
  }
  return encode(out);
}

bool istitle(std::string_view s) {
  bool prev_cased = false, any = false;
  for (const char32_t c : decode(s)) {
    if (is_upper_case(c) || is_title_case(c)) {
      if (prev_cased) return false;
      prev_cased = any = true;
    } else if (is_lower_case(c)) {
      if (!prev_cased) return false;
      prev_cased = any = true;
    } else {
      prev_cased = false;
    }
  }
  return any;
}

std::string casefold(std::string_view s) {
  const std::string text(s);
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                          static_cast<utf8proc_ssize_t>(text.size()), &out, UTF8PROC_CASEFOLD);
  if (n < 0) return lower(s);
  std::string r(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return r;
}

std::string expandtabs(std::string_view s, std::int64_t tabsize) {
  std::u32string out;
  std::int64_t column = 0;
  for (const char32_t c : decode(s)) {
    if (c == '\t') {
      if (tabsize > 0) {
        const std::int64_t spaces = tabsize - column % tabsize;
        out.append(static_cast<std::size_t>(spaces), U' ');
        column += spaces;
      }
    } else {
      out += c;
      column = (c == '\n' || c == '\r') ? 0 : column + 1;
    }
  }
  return encode(out);
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
