// Python str methods over UTF-8 strings, for the template engine: whitespace is Python's
// str.isspace(), indices and lengths count code points, case mapping is per code point
// (utf8proc's simple mappings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm::jinja::py {

bool is_space(char32_t c);
// str.isprintable() of one character: not in Cc, Cf, Cs, Co, Cn, Zl, Zp or Zs (but ' '), so
// repr() writes it as is.
bool is_printable(char32_t c);
// Python's per-character str.isalpha / isdecimal / isdigit / isnumeric / isalnum, and the word
// characters of its regex `\w` (isalnum or '_'): the Unicode general categories, with Python's
// digits and numerals outside the number categories (numeric_chars.inc).
bool is_alpha(char32_t c);
bool is_decimal(char32_t c);
bool is_digit(char32_t c);
bool is_numeric(char32_t c);
bool is_alnum(char32_t c);
bool is_word(char32_t c);
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);

// strip / lstrip / rstrip; chars == nullopt strips whitespace.
std::string strip(std::string_view s, bool left, bool right, const std::optional<std::string>& chars = std::nullopt);
// str.split(sep, maxsplit) (sep == nullopt: runs of whitespace); rsplit when from_right.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, std::int64_t maxsplit = -1,
                               bool from_right = false);
// str.splitlines(keepends).
std::vector<std::string> splitlines(std::string_view s, bool keepends = false);
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string title(std::string_view s);  // str.title()
// str.swapcase(), str.istitle(), str.casefold() (full Unicode case folding: "ß" -> "ss") and
// str.expandtabs(tabsize), as Python computes them.
std::string swapcase(std::string_view s);
bool istitle(std::string_view s);
std::string casefold(std::string_view s);
std::string expandtabs(std::string_view s, std::int64_t tabsize);
std::string replace(std::string_view s, std::string_view old, std::string_view now, std::int64_t count = -1);
// str.find / rfind: code point index or -1.
std::int64_t find(std::string_view s, std::string_view sub, bool from_right = false);
std::int64_t count(std::string_view s, std::string_view sub);
// str.center(width, fill): fill is one character (its UTF-8 bytes).
std::string center(std::string_view s, std::int64_t width, std::string_view fill = " ");
// s n times (n <= 0: empty).
std::string repeat(std::string_view s, std::int64_t n);

}  // namespace staticlm::jinja::py
