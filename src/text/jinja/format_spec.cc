#include "text/jinja/format_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "text/jinja/builtins.h"
#include "text/jinja/limits.h"
#include "text/utf8.h"

namespace staticlm::jinja {
namespace {

struct Spec {
  std::string fill = " ";  // one character (UTF-8)
  char align = 0;          // '<' '>' '=' '^', 0: the type's default
  char sign = 0;           // '+' '-' ' '
  bool no_negative_zero = false;  // 'z'
  bool alternate = false;         // '#'
  int width = -1;
  char grouping = 0;  // ',' '_'
  int precision = -1;
  char type = 0;
};

bool is_align(char c) { return c == '<' || c == '>' || c == '=' || c == '^'; }

int read_number(const std::string& s, std::size_t& p) {
  std::int64_t n = 0;
  while (p < s.size() && s[p] >= '0' && s[p] <= '9') n = std::min<std::int64_t>(n * 10 + (s[p++] - '0'), std::int64_t{1} << 30);
  return static_cast<int>(n);
}

// CPython's parse_internal_render_format_spec.
Spec parse(const std::string& s) {
  Spec f;
  std::size_t p = 0;
  std::size_t after_first = 0;
  utf8_decode(s, after_first);  // the first character, which may be a fill
  if (after_first < s.size() && is_align(s[after_first])) {
    f.fill = s.substr(0, after_first);
    f.align = s[after_first];
    p = after_first + 1;
  } else if (is_align(s[0])) {
    f.align = s[0];
    p = 1;
  }
  const bool fill_given = p == after_first + 1;
  if (p < s.size() && (s[p] == '+' || s[p] == '-' || s[p] == ' ')) f.sign = s[p++];
  if (p < s.size() && s[p] == 'z') {
    f.no_negative_zero = true;
    ++p;
  }
  if (p < s.size() && s[p] == '#') {
    f.alternate = true;
    ++p;
  }
  if (p < s.size() && s[p] == '0' && !fill_given) {
    f.fill = "0";
    if (f.align == 0) f.align = '0';  // '=' for numbers, '<' for strings: decided by the type
    ++p;
  }
  if (p < s.size() && s[p] >= '0' && s[p] <= '9') f.width = read_number(s, p);
  if (p < s.size() && (s[p] == ',' || s[p] == '_')) {
    f.grouping = s[p++];
    if (p < s.size() && (s[p] == ',' || s[p] == '_')) fail("Cannot specify both ',' and '_'.");
  }
  if (p < s.size() && s[p] == '.') {
    ++p;
    if (p >= s.size() || s[p] < '0' || s[p] > '9') fail("Format specifier missing precision");
    f.precision = read_number(s, p);
  }
  if (s.size() - p > 1) fail("Invalid format specifier '" + s + "'");
  if (p < s.size()) f.type = s[p];
  check_width(f.width, "format");
  check_width(f.precision, "format precision");
  return f;
}

[[noreturn]] void unknown_code(char type, const char* of) {
  fail("Unknown format code '" + std::string(1, type) + "' for object of type '" + of + "'");
}

// `body` padded to the width: fill on the side(s) the alignment says, or between the sign and
// the digits for '='.
std::string align_to_width(const std::string& sign, const std::string& body, const Spec& f, char default_align) {
  const std::size_t len = utf8_length(sign) + utf8_length(body);
  const std::size_t width = f.width < 0 ? 0 : static_cast<std::size_t>(f.width);
  if (len >= width) return sign + body;
  const std::size_t n = width - len;
  auto fill = [&](std::size_t k) {
    std::string out;
    for (std::size_t i = 0; i < k; ++i) out += f.fill;
    return out;
  };
  switch (f.align ? f.align : default_align) {
    case '<': return sign + body + fill(n);
    case '^': return fill(n / 2) + sign + body + fill(n - n / 2);
    case '=': return sign + fill(n) + body;
    default: return fill(n) + sign + body;
  }
}

std::string format_string(const std::string& s, Spec f) {
  if (f.type != 0 && f.type != 's') unknown_code(f.type, "str");
  if (f.sign) fail("Sign not allowed in string format specifier");
  if (f.no_negative_zero) fail("Negative zero coercion (z) not allowed in format specifier");
  if (f.alternate) fail("Alternate form (#) not allowed in string format specifier");
  if (f.align == '=') fail("'=' alignment not allowed in string format specifier");
  if (f.grouping) fail("Cannot specify '" + std::string(1, f.grouping) + "' with 's'.");
  if (f.align == '0') f.align = '<';
  std::string body = s;
  if (f.precision >= 0) {
    std::size_t at = 0;
    for (int i = 0; i < f.precision && at < body.size(); ++i) utf8_decode(body, at);
    body.resize(at);
  }
  return align_to_width("", body, f, '<');
}

// Digits with a separator every `every` digits from the right.
std::string group(const std::string& digits, char sep, int every) {
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % static_cast<std::size_t>(every) == 0) out += sep;
    out += digits[i];
  }
  return out;
}

// A number already split into sign, prefix (0x...), integer digits and the rest (fraction,
// exponent, '%'): grouping, zero padding (which Python also groups) and alignment.
std::string finish_number(bool negative, const std::string& prefix, std::string digits, const std::string& rest,
                          Spec f, int group_every) {
  const std::string sign = negative ? "-" : f.sign == '+' ? "+" : f.sign == ' ' ? " " : "";
  if (f.align == '0') f.align = '=';
  const bool zero_pad = f.fill == "0" && f.align == '=';
  const bool numeric = !digits.empty() && digits.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (f.grouping && numeric) {
    std::string grouped = group(digits, f.grouping, group_every);
    const std::size_t others = sign.size() + prefix.size() + rest.size();
    if (zero_pad && f.width >= 0 && grouped.size() + others < static_cast<std::size_t>(f.width)) {
      // The fewest digits whose grouped form (d + (d - 1) / every characters) fills the width.
      const std::size_t target = static_cast<std::size_t>(f.width) - others, every = static_cast<std::size_t>(group_every);
      std::size_t d = std::max(digits.size(), target * every / (every + 1));
      while (d > digits.size() && d - 1 + (d - 2) / every >= target) --d;
      while (d + (d - 1) / every < target) ++d;
      digits.insert(0, d - digits.size(), '0');
      grouped = group(digits, f.grouping, group_every);
    }
    digits = grouped;
  }
  return align_to_width(sign + prefix, digits + rest, f, '>');
}

std::string format_integer(std::int64_t v, Spec f) {
  const char type = f.type ? f.type : 'd';
  if (f.precision >= 0) fail("Precision not allowed in integer format specifier");
  if (f.no_negative_zero) fail("Negative zero coercion (z) not allowed in integer format specifier");
  if (type == 'c') {
    if (f.sign) fail("Sign not allowed with integer format specifier 'c'");
    if (f.alternate) fail("Alternate form (#) not allowed with integer format specifier 'c'");
    if (f.grouping) fail("Cannot specify ',' with 'c'.");
    if (v < 0 || v > 0x10FFFF) fail("%c arg not in range(0x110000)");
    std::string ch;
    utf8_append(ch, static_cast<char32_t>(v));
    if (f.align == '0') f.align = '=';
    return align_to_width("", ch, f, '>');
  }
  const bool negative = v < 0;
  const unsigned long long magnitude = negative ? 0ULL - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v);
  std::string digits, prefix;
  int every = 3;
  char buf[80];
  switch (type) {
    case 'd':
    case 'n':
      if (type == 'n' && f.grouping) fail("Cannot specify '" + std::string(1, f.grouping) + "' with 'n'.");
      std::snprintf(buf, sizeof buf, "%llu", magnitude);
      digits = buf;
      break;
    case 'x':
    case 'X':
    case 'o':
      std::snprintf(buf, sizeof buf, type == 'x' ? "%llx" : type == 'X' ? "%llX" : "%llo", magnitude);
      digits = buf;
      if (f.alternate) prefix = type == 'x' ? "0x" : type == 'X' ? "0X" : "0o";
      every = 4;
      break;
    case 'b': {
      for (unsigned long long m = magnitude; m != 0; m >>= 1) digits.insert(digits.begin(), static_cast<char>('0' + (m & 1)));
      if (digits.empty()) digits = "0";
      if (f.alternate) prefix = "0b";
      every = 4;
      break;
    }
    default: unknown_code(type, "int");
  }
  if (every == 4 && f.grouping == ',') fail("Cannot specify ',' with '" + std::string(1, type) + "'.");
  return finish_number(negative, prefix, digits, "", f, every);
}

// printf of a non-negative finite double; `alternate` is printf's '#' (and Python's).
std::string printf_double(const char* conv, int precision, double x, bool alternate = false) {
  const std::string spec = std::string(alternate ? "%#.*" : "%.*") + conv;
  const int n = std::snprintf(nullptr, 0, spec.c_str(), precision, x);
  check_string_size(static_cast<std::size_t>(n), "format");
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), precision, x);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// The exponent printf's %e gives x at `precision` digits after the point.
int decimal_exponent(double x, int precision) {
  const std::string e = printf_double("e", precision, x);
  return std::atoi(e.c_str() + e.find('e') + 1);
}

// Trailing zeros of the fraction dropped (keep_one: down to one digit), then a bare point.
void strip_trailing_zeros(std::string& s, bool keep_one) {
  const std::size_t dot = s.find('.');
  if (dot == std::string::npos) return;
  const std::size_t exp = std::min(s.find('e'), s.size());
  std::size_t end = exp;
  while (end > dot + (keep_one ? 2 : 1) && s[end - 1] == '0') --end;
  if (end == dot + 1) --end;  // no digits left: the point goes too
  s.erase(end, exp - end);
}

std::string format_float(double v, Spec f) {
  char type = f.type;
  switch (type) {
    case 0: case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case 'n': case '%': break;
    default: unknown_code(type, "float");
  }
  if (type == 'n' && f.grouping) fail("Cannot specify '" + std::string(1, f.grouping) + "' with 'n'.");
  if (type == 'n') type = 'g';
  const bool upper = type == 'E' || type == 'F' || type == 'G';
  bool negative = std::signbit(v);
  const double x = std::fabs(v);
  std::string body;
  if (std::isnan(v) || std::isinf(v)) {
    body = std::isnan(v) ? "nan" : "inf";
    if (upper) body = std::isnan(v) ? "NAN" : "INF";
    if (type == '%') body += "%";
    if (std::isnan(v)) negative = false;
  } else if (type == 0 && f.precision < 0) {
    body = python_float_repr(x);  // repr: the shortest digits that round-trip
    if (f.alternate && body.find('.') == std::string::npos) body.insert(std::min(body.find('e'), body.size()), ".");
  } else if (type == 0) {
    // Like 'g', but fixed notation keeps a digit after the point, and the exponent form takes
    // over from exp >= precision - 1.
    const int p = std::max(f.precision, 1);
    const int exp = decimal_exponent(x, p - 1);
    if (exp >= -4 && exp < p - 1) {
      body = printf_double("f", p - 1 - exp, x, f.alternate);
      if (!f.alternate) strip_trailing_zeros(body, true);
      if (body.find('.') == std::string::npos) body += ".0";
    } else {
      body = printf_double("e", p - 1, x, f.alternate);
      if (!f.alternate) strip_trailing_zeros(body, false);
    }
  } else {
    const int p = f.precision < 0 ? 6 : f.precision;
    const char conv[2] = {type == '%' ? 'f' : static_cast<char>(std::tolower(type)), 0};
    body = printf_double(conv, p, type == '%' ? x * 100 : x, f.alternate);
    if (upper) {
      for (char& c : body) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (type == '%') body += "%";
  }
  if (f.no_negative_zero && negative && body.find_first_of("123456789") == std::string::npos) negative = false;
  // The integer digits are what grouping applies to.
  const std::size_t int_end = std::min(body.find_first_not_of("0123456789"), body.size());
  return finish_number(negative, "", body.substr(0, int_end), body.substr(int_end), f, 3);
}

}  // namespace

std::string format_with_spec(const Value& v, const std::string& spec) {
  const Spec f = parse(spec);
  if (v.is_string()) return format_string(v.as_string(), f);
  if (v.is_bool() || v.is_int()) {
    const char t = f.type;
    if (t == 'e' || t == 'E' || t == 'f' || t == 'F' || t == 'g' || t == 'G' || t == '%') {
      return format_float(static_cast<double>(v.as_int()), f);
    }
    return format_integer(v.as_int(), f);
  }
  if (v.is_float()) return format_float(v.as_double(), f);
  fail("unsupported format string passed to " + v.type_name() + ".__format__");
}

}  // namespace staticlm::jinja
