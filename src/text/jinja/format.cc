#include "text/jinja/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/builtins.h"
#include "text/jinja/format_spec.h"
#include "text/jinja/limits.h"
#include "text/utf8.h"

namespace staticlm::jinja {
namespace {

// printf of one value into a string of whatever length it needs (%.600f is 600 digits and
// more; the width and precision were checked against the string limit first).
template <typename T>
std::string c_format(const std::string& spec, T value) {
  const int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n < 0) fail("format: cannot format with " + spec);
  check_string_size(static_cast<std::size_t>(n), "format");
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

// Widths and precisions saturate here (past any string the limits allow), so a long run of
// digits cannot overflow an int.
constexpr std::int64_t kMaxNumber = std::int64_t{1} << 30;

int grow_number(int n, char digit) {
  return static_cast<int>(std::min<std::int64_t>(kMaxNumber, std::int64_t{n < 0 ? 0 : n} * 10 + (digit - '0')));
}

std::string pad(std::string s, std::size_t width, bool left, char fill = ' ') {
  const std::size_t len = utf8_length(s);
  if (len >= width) return s;
  const std::string p(width - len, fill);
  return left ? s + p : p + s;
}

// Python's ascii() of a repr: characters past ASCII as \xNN, \uNNNN or \UNNNNNNNN.
std::string ascii_escaped(const std::string& s) {
  std::string out;
  char buf[16];
  for (std::size_t i = 0; i < s.size();) {
    const char32_t c = utf8_decode(s, i);
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    std::snprintf(buf, sizeof buf, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x", static_cast<unsigned>(c));
    out += buf;
  }
  return out;
}

// One conversion with printf flags/width/precision.
std::string convert(char conv, const std::string& flags, int width, int precision, const Value& v, bool escape) {
  check_width(width, "format");
  const bool left = flags.find('-') != std::string::npos;
  if (conv == 's' || conv == 'r' || conv == 'a') {
    std::string s = conv == 's' ? v.str() : v.repr();
    if (conv == 'a') s = ascii_escaped(s);
    if (escape && !(conv == 's' && v.is_markup())) s = html_escape(s);
    if (precision >= 0) s = s.substr(0, static_cast<std::size_t>(precision));
    return pad(s, width < 0 ? 0 : static_cast<std::size_t>(width), left);
  }
  if (conv == 'c') {
    // Python's %c of an int is that code point (chr(i)).
    std::string ch;
    if (v.is_string() && utf8_length(v.as_string()) == 1) {
      ch = v.as_string();
    } else if (!v.is_int() && !v.is_bool()) {
      fail("%c requires int or char");
    } else {
      const std::int64_t cp = v.as_int();
      if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("%c arg not in range(0x110000) or a surrogate: " + std::to_string(cp));
      utf8_append(ch, static_cast<char32_t>(cp));
    }
    return pad(ch, width < 0 ? 0 : width, left);
  }
  if (!v.is_number()) fail("%" + std::string(1, conv) + " format: a real number is required, not " + v.type_name());
  check_width(precision, "format precision");
  std::string spec = "%" + flags;
  if (width >= 0) spec += std::to_string(width);
  if (precision >= 0) spec += "." + std::to_string(precision);
  if ((conv == 'x' || conv == 'X' || conv == 'o') && v.is_float()) {
    fail("%" + std::string(1, conv) + " format: an integer is required, not float");
  }
  if (conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x' || conv == 'X' || conv == 'o') {
    const long long i = v.is_float() ? checked_float_to_int(v.as_double(), "format") : static_cast<long long>(v.as_int());
    spec += "ll";
    spec += conv == 'i' || conv == 'u' ? 'd' : conv;
    if ((conv == 'x' || conv == 'X' || conv == 'o') && i < 0) return "-" + c_format(spec, 0ULL - static_cast<unsigned long long>(i));
    return c_format(spec, i);
  }
  if (conv == 'f' || conv == 'F' || conv == 'e' || conv == 'E' || conv == 'g' || conv == 'G') {
    spec += conv;
    return c_format(spec, v.as_double());
  }
  fail("unsupported format character '" + std::string(1, conv) + "'");
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args, bool escape) {
  std::vector<Value> values;
  const bool by_name = args.is_dict();
  if (args.is_list() && args.is_tuple()) {
    values = args.list();
  } else {
    values.push_back(args);
  }
  std::size_t next = 0;
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) fail("incomplete format");
    if (fmt[i] == '%') {
      out += '%';
      continue;
    }
    const Value* named = nullptr;
    if (fmt[i] == '(') {
      const std::size_t close = fmt.find(')', i);
      if (close == std::string::npos || !by_name) fail("format requires a mapping");
      named = args.dict_object().find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (named == nullptr) fail("format: key " + fmt.substr(i + 1, close - i - 1) + " is missing");
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    int width = -1, precision = -1;
    auto number = [&](int& target) {
      if (i < fmt.size() && fmt[i] == '*') {
        if (next >= values.size()) fail("not enough arguments for format string");
        target = static_cast<int>(std::clamp<std::int64_t>(values[next++].as_int(), -1, kMaxNumber));
        ++i;
        return;
      }
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') target = grow_number(target, fmt[i++]);
    };
    number(width);
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = 0;
      number(precision);
    }
    if (i >= fmt.size()) fail("incomplete format");
    const Value* v = named;
    if (v == nullptr) {
      if (next >= values.size()) fail("not enough arguments for format string");
      v = &values[next++];
    }
    out += convert(fmt[i], flags, width, precision, *v, escape);
  }
  // Python skips this check when the argument could be a mapping (anything with items but a
  // tuple or a string): "ab" % [1] is "ab".
  const bool mapping_like = by_name || (args.is_list() && !args.is_tuple());
  if (!mapping_like && next < values.size()) fail("not all arguments converted during string formatting");
  return out;
}

namespace {

// str.format over `fmt`; a spec may hold replacement fields itself ("{:>{}}", one level deep, as
// Python allows), numbered on from the field they belong to.
std::string brace_format_at(const std::string& fmt, CallArgs& args, std::size_t& auto_index, int depth, bool escape) {
  std::string out;
  for (std::size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') ++i;
      else fail("format: single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    // The matching '}': a spec's own fields nest inside.
    std::size_t close = i + 1;
    for (int open = 1; close < fmt.size(); ++close) {
      if (fmt[close] == '{') ++open;
      if (fmt[close] == '}' && --open == 0) break;
    }
    if (close >= fmt.size()) fail("format: expected '}' before end of string");
    std::string field = fmt.substr(i + 1, close - i - 1), spec;
    i = close;
    if (const std::size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    // field_name[!conversion]: conversion r, s or a.
    std::string conversion;
    if (const std::size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field = field.substr(0, bang);
      if (conversion != "r" && conversion != "s" && conversion != "a") {
        fail("format: unknown conversion specifier " + (conversion.empty() ? std::string("(empty)") : conversion));
      }
    }
    // The argument's name or index, then attributes (.name) and items ([key]) as jinja2's
    // sandboxed formatter reads them (the environment's getattr / getitem).
    const std::size_t path_start = std::min(field.find_first_of(".["), field.size());
    const std::string path = field.substr(path_start);
    field = field.substr(0, path_start);
    // jinja2's formatter numbers only a field that is wholly empty ("{.a}" names argument '').
    if (field.empty() && !path.empty()) fail("format: no argument named ''");
    Value v;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      // Python numbers "{}" fields on from 0 and refuses them next to "{0}" fields, in either order
      // with one message (string.Formatter's, which jinja2's sandbox formats with).
      constexpr std::size_t kManual = static_cast<std::size_t>(-1);
      std::size_t k = auto_index;
      if (field.empty()) {
        if (auto_index == kManual) fail("cannot switch from manual field specification to automatic field numbering");
        ++auto_index;
      } else if (field.size() > 9 || field.find_first_not_of("0123456789") != std::string::npos) {
        fail("format: bad field '" + field + "'");
      } else {
        if (auto_index != 0 && auto_index != kManual) fail("cannot switch from manual field specification to automatic field numbering");
        auto_index = kManual;
        k = std::stoul(field);
      }
      if (k >= args.positional.size()) fail("format: replacement index " + std::to_string(k) + " out of range");
      v = args.positional[k];
    } else {
      bool found = false;
      for (const auto& [name, x] : args.keyword) {
        if (name == field) {
          v = x;
          found = true;
        }
      }
      if (!found) fail("format: no argument named '" + field + "'");
    }
    for (std::size_t q = 0; q < path.size();) {
      if (path[q] == '.') {
        const std::size_t end = std::min(path.find_first_of(".[", q + 1), path.size());
        if (end == q + 1) fail("format: empty attribute in format string");
        v = get_attr(v, path.substr(q + 1, end - q - 1));
        q = end;
        continue;
      }
      const std::size_t end = path.find(']', q);
      if (end == std::string::npos) fail("format: missing ']' in format string");
      if (end == q + 1) fail("format: empty attribute in format string");
      const std::string key = path.substr(q + 1, end - q - 1);
      const bool index = key.size() <= 18 && key.find_first_not_of("0123456789") == std::string::npos;
      v = get_item(v, index ? Value(static_cast<std::int64_t>(std::stoll(key))) : Value(key));
      q = end + 1;
      if (q < path.size() && path[q] != '.' && path[q] != '[') {
        fail("format: only '.' or '[' may follow ']' in format field specifier");
      }
    }
    if (conversion == "r") v = Value(v.repr());
    if (conversion == "s") v = Value(v.str());
    if (conversion == "a") v = Value(ascii_escaped(v.repr()));
    if (spec.find('{') != std::string::npos) {
      if (depth > 0) fail("format: Max string recursion exceeded");
      spec = brace_format_at(spec, args, auto_index, depth + 1, false);
    }
    const std::string text = spec.empty() ? v.str() : format_with_spec(v, spec);
    out += escape && !v.is_markup() ? html_escape(text) : text;
  }
  return out;
}

}  // namespace

std::string brace_format(const std::string& fmt, CallArgs& args, bool escape) {
  std::size_t auto_index = 0;
  return brace_format_at(fmt, args, auto_index, 0, escape);
}

}  // namespace staticlm::jinja
