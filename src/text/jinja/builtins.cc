#include "text/jinja/builtins.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <unordered_set>

#include "text/jinja/format.h"
#include "text/jinja/limits.h"
#include "text/jinja/pprint.h"
#include "text/jinja/pystr.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace staticlm::jinja {
namespace {

// Reads a call's arguments the way Python binds them: position i, or the keyword, or a default.
class Args {
 public:
  Args(CallArgs& a, std::string fn) : a_(a), fn_(std::move(fn)) {}
  Value get(std::size_t i, const char* kw, Value def = Value()) const {
    if (i < a_.positional.size()) return a_.positional[i];
    for (const auto& [k, v] : a_.keyword) {
      if (k == kw) return v;
    }
    return def;
  }
  bool has(std::size_t i, const char* kw) const {
    if (i < a_.positional.size()) return true;
    for (const auto& kv : a_.keyword) {
      if (kv.first == kw) return true;
    }
    return false;
  }
  std::string str(std::size_t i, const char* kw, const std::string& def) const {
    const Value v = get(i, kw);
    if (v.is_undefined()) return def;
    if (!v.is_string()) fail(fn_ + "(): " + kw + " must be a string, not " + v.type_name());
    return v.as_string();
  }
  std::int64_t integer(std::size_t i, const char* kw, std::int64_t def) const {
    const Value v = get(i, kw);
    if (v.is_undefined()) return def;
    if (!v.is_int() && !v.is_bool()) fail(fn_ + "(): " + kw + " must be an integer, not " + v.type_name());
    return v.as_int();
  }
  bool flag(std::size_t i, const char* kw, bool def) const {
    const Value v = get(i, kw);
    return v.is_undefined() ? def : v.truthy();
  }
  std::size_t count() const { return a_.positional.size(); }
  CallArgs rest(std::size_t from) const {
    CallArgs r;
    for (std::size_t i = from; i < a_.positional.size(); ++i) r.positional.push_back(a_.positional[i]);
    r.keyword = a_.keyword;
    return r;
  }

 private:
  CallArgs& a_;
  std::string fn_;
};

std::int64_t length_of(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined: return 0;
    case Value::Type::kString: return static_cast<std::int64_t>(utf8_length(v.as_string()));
    case Value::Type::kList: return static_cast<std::int64_t>(v.list().size());
    case Value::Type::kDict: return static_cast<std::int64_t>(v.dict_object().items.size());
    default: fail("object of type '" + v.type_name() + "' has no len()");
  }
}

// jinja2's make_attrgetter: "a.b.0" looked up item first, then attribute.
Value attr_path(const Value& item, const std::string& path, const Value& def = Value()) {
  Value v = item;
  for (const std::string& part : py::split(path, std::string("."))) {
    // Up to 18 digits: an index that fits (a longer run of digits is looked up as a string).
    const bool digits = !part.empty() && part.size() <= 18 &&
                        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = get_item(v, digits ? Value(static_cast<std::int64_t>(std::stoll(part))) : Value(part));
    if (v.is_undefined()) return def.is_undefined() ? v : def;
  }
  return v;
}

// A sort / compare key: strings lower-cased unless case-sensitive.
Value fold_case(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(py::lower(v.as_string())) : v;
}

std::vector<Value> sorted(std::vector<Value> items, const std::function<Value(const Value&)>& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  for (auto& v : items) keyed.emplace_back(key(v), std::move(v));
  auto less = [](const auto& a, const auto& b) { return values_less(a.first, b.first); };
  if (reverse) {
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) { return less(b, a); });
  } else {
    std::stable_sort(keyed.begin(), keyed.end(), less);
  }
  std::vector<Value> out;
  for (auto& kv : keyed) out.push_back(std::move(kv.second));
  return out;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

Value do_indent(const Value& input, Args& a) {
  const Value w = a.get(0, "width", Value(4));
  if (!w.is_string()) check_width(w.as_int(), "indent");
  const std::string indention = w.is_string() ? w.as_string() : std::string(static_cast<std::size_t>(std::max<std::int64_t>(0, w.as_int())), ' ');
  const bool first = a.flag(1, "first", false), blank = a.flag(2, "blank", false);
  // jinja2 appends a newline to its input first, which only a string takes.
  if (!input.is_string()) {
    require_defined(input);
    fail("unsupported operand type(s) for +=: '" + input.type_name() + "' and 'str'");
  }
  const std::string text = input.str();
  const std::vector<std::string> lines = py::splitlines(text + "\n");
  // Every line gets the indention: the result's size is known before it is built.
  check_string_size(text.size() + saturated_product(lines.size() + 1, indention.size()), "indent");
  std::string rv;
  if (blank) {
    for (std::size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
  }
  return Value(first ? indention + rv : rv);
}

// Python's int(s, base) for a str: surrounding whitespace, a sign, the base's prefix (0x, 0o,
// 0b; base 0 takes it from the prefix and refuses other leading zeros), single underscores
// between digits. False when Python raises ValueError; an error past 64 bits.
bool parse_python_int(const std::string& text, std::int64_t base, std::int64_t& out) {
  const std::string s = py::strip(text, true, true);
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  auto prefix = [&](char letter) {
    return i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 0x20) == letter;
  };
  bool had_prefix = false;
  const bool inferred = base == 0;
  if (base == 0) {
    base = prefix('x') ? 16 : prefix('o') ? 8 : prefix('b') ? 2 : 10;
    had_prefix = base != 10;
  } else if ((base == 16 && prefix('x')) || (base == 8 && prefix('o')) || (base == 2 && prefix('b'))) {
    had_prefix = true;
  }
  if (base < 2 || base > 36) return false;  // Python: ValueError
  if (had_prefix) {
    i += 2;
    if (i < s.size() && s[i] == '_') ++i;  // 0x_1f
  }
  const std::size_t first = i;
  std::uint64_t value = 0;
  bool any = false, leading_zero = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (!any || i + 1 >= s.size() || s[i + 1] == '_') return false;
      continue;
    }
    const int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
    if (d >= base) return false;
    if (!any && d == 0) leading_zero = true;
    any = true;
    if (value > (static_cast<std::uint64_t>(INT64_MAX) + 1 - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base)) {
      fail("int(): " + s.substr(first) + " does not fit in 64 bits (the limit)");
    }
    value = value * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  if (!any) return false;
  if (inferred && !had_prefix && leading_zero && value != 0) return false;  // int('010', 0)
  if (!negative && value > static_cast<std::uint64_t>(INT64_MAX)) fail("int(): " + s + " does not fit in 64 bits (the limit)");
  out = negative ? static_cast<std::int64_t>(0 - value) : static_cast<std::int64_t>(value);
  return true;
}

// Python's float(s) for a str: surrounding whitespace, single underscores between digits,
// inf / infinity / nan in any case; out of range is +-inf (or 0), as Python. False when Python
// raises ValueError.
bool parse_python_float(const std::string& text, double& out) {
  const std::string s = py::strip(text, true, true);
  if (s.empty() || s.find_first_of("xXpP(") != std::string::npos) return false;  // no hex floats, no nan(...)
  std::string digits;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '_') {
      digits += s[i];
      continue;
    }
    const bool between = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                         std::isdigit(static_cast<unsigned char>(s[i + 1]));
    if (!between) return false;
  }
  char* end = nullptr;
  errno = 0;
  out = std::strtod(digits.c_str(), &end);
  return end == digits.c_str() + digits.size();
}

// int(x) and float(x) of an undefined value raise jinja2's undefined error (its Undefined
// refuses __int__ and __float__) rather than falling back to the default.
Value do_int(const Value& v, Args& a) {
  require_defined(v);
  const Value def = a.get(0, "default", Value(0));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return Value(checked_float_to_int(v.as_double(), "int"));
  if (v.is_string()) {
    std::int64_t r = 0;
    if (parse_python_int(v.as_string(), a.integer(1, "base", 10), r)) return Value(r);
    double d = 0;  // jinja2: int(float(value)) next, so "42.23"|int is 42
    if (parse_python_float(v.as_string(), d) && std::isfinite(d)) return Value(checked_float_to_int(d, "int"));
  }
  return def;
}

Value do_float(const Value& v, Args& a) {
  require_defined(v);
  const Value def = a.get(0, "default", Value(0.0));
  if (v.is_number()) return Value(v.as_double());
  double d = 0;
  if (v.is_string() && parse_python_float(v.as_string(), d)) return Value(d);
  return def;
}

// Python's round(int, ndigits): an int; a negative ndigits rounds to a power of ten, ties to even.
Value round_integer(std::int64_t i, std::int64_t precision) {
  if (precision >= 0) return Value(i);
  if (precision < -18) return Value(std::int64_t{0});
  std::int64_t p = 1;
  for (std::int64_t k = 0; k < -precision; ++k) p *= 10;
  std::int64_t q = i / p, r = i % p;
  if (r < 0) {  // floor division
    r += p;
    --q;
  }
  if (r > p - r || (r == p - r && (q & 1) != 0)) ++q;
  const __int128 out = static_cast<__int128>(q) * p;
  if (out > INT64_MAX || out < INT64_MIN) fail("round(): the result does not fit a 64-bit integer");
  return Value(static_cast<std::int64_t>(out));
}

Value do_round(const Value& v, Args& a) {
  require_defined(v);
  const std::int64_t precision = a.integer(0, "precision", 0);
  const std::string method = a.str(1, "method", "common");
  if ((v.is_int() || v.is_bool()) && method == "common") return round_integer(v.as_int(), precision);
  // floor / ceil of an integer at precision >= 0 is the integer itself (Python divides exact
  // integers; scaling it as a double first would round past 2^53).
  if ((v.is_int() || v.is_bool()) && precision >= 0 && (method == "floor" || method == "ceil")) {
    return Value(static_cast<double>(v.as_int()));
  }
  if (precision >= 300) return Value(v.as_double());  // finer than any double's digits
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  double r;
  if (method == "common") {
    if (precision > 0 && precision < 300 && std::isfinite(v.as_double())) {
      // Python rounds the exact binary value (2.675 -> 2.67), ties to even; so does printf.
      char buf[512];
      std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(precision), v.as_double());
      return Value(std::strtod(buf, nullptr));
    }
    r = std::nearbyint(x);  // Python's round: half to even
  } else if (method == "floor" || method == "ceil") {
    // math.floor / math.ceil return an int, which has no negative zero.
    r = method == "floor" ? std::floor(x) : std::ceil(x);
    if (r == 0) r = 0.0;
  } else {
    fail("round(): method must be 'common', 'ceil' or 'floor'");
  }
  return Value(r / scale);
}

Value do_join(const Value& v, Args& a) {
  const std::string sep = a.str(0, "d", "");
  Value attribute = a.get(1, "attribute");
  if (attribute.is_none()) attribute = Value();
  std::string out;
  bool first = true;
  for (const Value& item : v.iterate()) {
    const std::string piece = (attribute.is_undefined() ? item : attr_path(item, attribute.str())).str();
    // Checked as it grows: a list may name one long string many times.
    check_string_size(out.size() + (first ? 0 : sep.size()) + piece.size(), "join", 0);
    if (!first) out += sep;
    out += piece;
    first = false;
  }
  return Value(out);
}

// map, select, reject, selectattr and rejectattr read nothing from a false value (jinja2's
// `if value:` before the loop): `none|map('upper')|list` is [], `3|map('upper')` is refused.
Value do_map(const Value& v, Args& a, CallArgs& raw) {
  std::vector<Value> out;
  if (!v.truthy()) return Value(std::move(out));
  if (a.has(99, "attribute")) {
    const std::string attribute = a.get(99, "attribute").str();
    const Value def = a.get(99, "default");
    for (const Value& item : v.iterate()) out.push_back(attr_path(item, attribute, def));
    return Value(std::move(out));
  }
  if (raw.positional.empty()) fail("map(): needs a filter name or attribute=");
  const std::string filter = raw.positional[0].str();
  for (const Value& item : v.iterate()) {
    CallArgs rest = a.rest(1);
    out.push_back(apply_filter(filter, item, rest));
  }
  return Value(std::move(out));
}

// select / reject (attr empty) and selectattr / rejectattr.
Value do_select(const Value& v, CallArgs& raw, bool want, bool by_attr) {
  std::vector<Value> out;
  if (!v.truthy()) return Value(std::move(out));
  std::size_t k = 0;
  std::string attribute;
  if (by_attr) {
    if (raw.positional.empty()) fail("selectattr(): needs an attribute name");
    attribute = raw.positional[k++].str();
  }
  std::string test;
  if (k < raw.positional.size()) test = raw.positional[k++].str();
  CallArgs test_args;
  for (std::size_t i = k; i < raw.positional.size(); ++i) test_args.positional.push_back(raw.positional[i]);
  test_args.keyword = raw.keyword;
  for (const Value& item : v.iterate()) {
    const Value x = by_attr ? attr_path(item, attribute) : item;
    CallArgs args = test_args;
    const bool ok = test.empty() ? x.truthy() : apply_test(test, x, args);
    if (ok == want) out.push_back(item);
  }
  return Value(std::move(out));
}

Value min_max(const Value& v, Args& a, bool want_max) {
  const bool cs = a.flag(0, "case_sensitive", false);
  const Value attribute = a.get(1, "attribute");
  const std::vector<Value> items = v.iterate();
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) { return fold_case(attribute.is_undefined() ? x : attr_path(x, attribute.str()), cs); };
  const Value* best = &items[0];
  for (const Value& x : items) {
    if (want_max ? values_less(key(*best), key(x)) : values_less(key(x), key(*best))) best = &x;
  }
  return *best;
}

// transformers' tojson filter: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False), the arguments in that order.
Value do_tojson(const Value& v, CallArgs& call) {
  static constexpr const char* kParams[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
  if (call.positional.size() > 4) {
    fail("tojson() takes from 1 to 5 positional arguments but " + std::to_string(call.positional.size() + 1) + " were given");
  }
  for (const auto& kv : call.keyword) {
    if (std::find(std::begin(kParams), std::end(kParams), kv.first) == std::end(kParams)) {
      fail("tojson() got an unexpected keyword argument '" + kv.first + "'");
    }
  }
  const Args a(call, "tojson");
  JsonOptions o;
  o.ensure_ascii = a.flag(0, "ensure_ascii", false);
  const Value indent = a.get(1, "indent");
  if (indent.is_string()) {
    o.indent = indent.as_string();
  } else if (indent.is_int() || indent.is_bool()) {  // json: ' ' * indent, newlines even for <= 0
    check_width(indent.as_int(), "tojson");
    o.indent = std::string(static_cast<std::size_t>(std::max<std::int64_t>(indent.as_int(), 0)), ' ');
  } else if (!indent.is_undefined() && !indent.is_none()) {
    fail("tojson(): indent must be an int, a str or None, not " + indent.type_name());
  }
  const Value seps = a.get(2, "separators");
  if (!seps.is_undefined() && !seps.is_none()) {
    if (!seps.is_list() || seps.list().size() != 2 || !seps.list()[0].is_string() || !seps.list()[1].is_string()) {
      fail("tojson(): separators must be an (item_separator, key_separator) pair of strings");
    }
    o.item_sep = seps.list()[0].as_string();
    o.key_sep = seps.list()[1].as_string();
  }
  o.sort_keys = a.flag(3, "sort_keys", false);
  return Value(v.to_json(o));
}

Value do_truncate(const Value& v, Args& a) {
  const std::int64_t length = a.integer(0, "length", 255);
  const bool killwords = a.flag(1, "killwords", false);
  const std::string end = a.str(2, "end", "...");
  const std::int64_t leeway = a.integer(3, "leeway", 5);
  if (length < static_cast<std::int64_t>(utf8_length(end))) {
    fail("truncate: expected length >= " + std::to_string(utf8_length(end)) + ", got " + std::to_string(length));
  }
  if (leeway < 0) fail("truncate: expected leeway >= 0, got " + std::to_string(leeway));
  // jinja2 takes len() of the value and slices it: a short list or dict comes back as it is,
  // a long one cannot be cut, and a value without a length fails.
  if (v.is_undefined()) return v;
  if (v.is_list() || v.is_dict()) {
    const std::size_t n = v.is_list() ? v.list().size() : v.dict_object().items.size();
    if (static_cast<std::int64_t>(n) <= length + leeway) return v;
    fail("truncate: cannot cut a " + v.type_name() + " (a string was expected)");
  }
  if (!v.is_string()) fail("object of type '" + v.type_name() + "' has no len()");
  const std::u32string s = py::decode(v.as_string());
  if (static_cast<std::int64_t>(s.size()) <= length + leeway) return v;
  const std::size_t keep = static_cast<std::size_t>(std::max<std::int64_t>(0, length - static_cast<std::int64_t>(utf8_length(end))));
  std::u32string r = s.substr(0, keep);
  if (!killwords) {
    const std::size_t sp = r.rfind(U' ');
    if (sp != std::u32string::npos) r = r.substr(0, sp);
  }
  return Value(py::encode(r) + end);
}

// jinja2's filesizeformat: float(value) in bytes, decimal (kB, MB, ...) or binary (KiB, ...)
// prefixes, one decimal.
Value do_filesizeformat(const Value& v, Args& a) {
  require_defined(v);
  double bytes = 0;
  if (v.is_number() || v.is_bool()) {
    bytes = v.as_double();
  } else if (!v.is_string() || !parse_python_float(v.as_string(), bytes)) {
    fail(v.is_string() ? "could not convert string to float: " + v.repr()
                       : "float() argument must be a string or a real number, not '" + v.type_name() + "'");
  }
  const bool binary = a.flag(0, "binary", false);
  const double base = binary ? 1024 : 1000;
  static constexpr const char* kDecimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  static constexpr const char* kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  char buf[400];
  if (bytes == 1) return Value("1 Byte");
  if (bytes < base) {
    if (std::isinf(bytes)) fail("cannot convert float infinity to integer");
    // int(bytes), every digit; + 0.0 makes int(-0.5) print 0, not -0.
    std::snprintf(buf, sizeof buf, "%.0f Bytes", std::trunc(bytes) + 0.0);
    return Value(std::string(buf));
  }
  // Python compares the float with the exact integer base ** (i + 2) (1e24 is below 1000 ** 8),
  // then divides by that integer rounded to a float. A long double holds each of them exactly.
  long double unit = static_cast<long double>(base);
  for (int i = 0; i < 8; ++i) {
    unit *= static_cast<long double>(base);
    if (static_cast<long double>(bytes) < unit || i == 7) {
      std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / static_cast<double>(unit), binary ? kBinary[i] : kDecimal[i]);
      return Value(std::string(buf));
    }
  }
  return Value();  // not reached
}

// Python's urllib.parse.quote of the UTF-8 bytes: letters, digits, "_.-~" and `safe` kept.
std::string url_quote(const std::string& s, bool for_query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (c == '/' && !for_query)) {
      out += static_cast<char>(c);
    } else if (c == ' ' && for_query) {
      out += '+';  // jinja2 turns the query's %20 into +
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// jinja2's urlencode: a string (or any non-iterable) quoted keeping "/"; a mapping or a
// sequence of pairs as a query string "k=v&k2=v2".
Value do_urlencode(const Value& v) {
  const bool mapping = v.is_dict() && !v.dict_object().is_namespace;  // a namespace is not iterable
  if (v.is_string() || !(v.is_list() || mapping)) return Value(url_quote(v.str(), false));
  std::string out;
  const auto add = [&](const Value& k, const Value& x) {
    out += (out.empty() ? "" : "&") + url_quote(k.str(), true) + "=" + url_quote(x.str(), true);
  };
  if (v.is_dict()) {
    for (const auto& [k, x] : v.dict_object().items) add(k, x);
  } else {
    for (const Value& item : v.list()) {
      const std::vector<Value> pair = item.iterate();
      if (pair.size() != 2) {
        fail(pair.size() < 2 ? "not enough values to unpack (expected 2, got " + std::to_string(pair.size()) + ")"
                             : "too many values to unpack (expected 2)");
      }
      add(pair[0], pair[1]);
    }
  }
  return Value(out);
}

// jinja2's xmlattr: key="value" for each entry whose value is not none or undefined, escaped,
// with a leading space (autospace). Keys holding whitespace, "/", ">" or "=" are refused, as
// jinja2 3.1.4 does (they would let a value write attributes of its own).
Value do_xmlattr(const Value& v, Args& a) {
  require_defined(v);
  if (!v.is_dict() || v.dict_object().is_namespace) fail("'" + v.type_name() + "' object has no attribute 'items'");
  std::string out;
  for (const auto& [k, x] : v.dict_object().items) {
    if (x.is_none() || x.is_undefined()) continue;
    if (!k.is_string()) fail("expected string or bytes-like object, got '" + k.type_name() + "'");
    const std::string key = k.str();
    if (key.find_first_of(" \t\n\r\f\v/>=") != std::string::npos) fail("Invalid character in attribute name: " + k.repr());
    if (!out.empty()) out += ' ';
    out += html_escape(key);
    out += "=\"";
    out += html_escape(x.str());
    out += '"';
  }
  if (a.flag(0, "autospace", true) && !out.empty()) out.insert(out.begin(), ' ');
  return Value(out);
}

Value do_filter(const std::string& name, const Value& v, CallArgs& raw) {
  Args a(raw, name);
  if (name == "abs") {
    require_defined(v);
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_number()) return Value(v.as_int() < 0 ? checked_int("-", 0, v.as_int()) : v.as_int());
    fail("bad operand type for abs(): '" + v.type_name() + "'");
  }
  if (name == "attr") {  // Python's getattr only: a dict's keys are items, not attributes
    const std::string n = a.get(0, "name").str();
    if (v.is_dict() && !v.dict_object().is_namespace && n != "items" && n != "keys" && n != "values" && n != "get") {
      return Value::undefined("'dict object' has no attribute '" + n + "'");
    }
    return get_attr(v, n);
  }
  if (name == "batch") {
    const std::int64_t n = a.integer(0, "linecount", 1);
    if (n <= 0) fail("batch(): linecount must be positive");
    const Value fill = a.get(1, "fill_with", Value::none());
    std::vector<Value> out, cur;
    for (const Value& x : v.iterate()) {
      cur.push_back(x);
      if (static_cast<std::int64_t>(cur.size()) == n) out.emplace_back(std::exchange(cur, {}));
    }
    if (!cur.empty()) {
      if (!fill.is_none()) {
        check_list_size(static_cast<std::size_t>(n), 0, "batch");  // the padded last row
        while (static_cast<std::int64_t>(cur.size()) < n) cur.push_back(fill);
      }
      out.emplace_back(std::move(cur));
    }
    return Value(std::move(out));
  }
  if (name == "capitalize") return Value(py::capitalize(v.str()));
  if (name == "center") return Value(py::center(v.str(), a.integer(0, "width", 80)));
  if (name == "count" || name == "length") {
    if (v.is_generator()) fail("object of type 'generator' has no len()");
    return Value(length_of(v));
  }
  if (name == "default" || name == "d") {
    const bool boolean = a.flag(1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, "default_value", Value(""));
    return v;
  }
  if (name == "dictsort") {
    require_defined(v);
    if (!v.is_dict()) fail("dictsort(): expected a dict, got " + v.type_name());
    const bool cs = a.flag(0, "case_sensitive", false);
    const std::string by = a.str(1, "by", "key");
    if (by != "key" && by != "value") fail("dictsort(): by must be 'key' or 'value'");
    std::vector<Value> items;
    for (const auto& [k, x] : v.dict_object().items) items.emplace_back(std::vector<Value>{k, x}, true);
    const std::size_t pos = by == "key" ? 0 : 1;
    return Value(sorted(std::move(items), [&](const Value& t) { return fold_case(t.list()[pos], cs); }, a.flag(2, "reverse", false)));
  }
  // Markup in: escape gives it back as it is; forceescape escapes its text again.
  if (name == "escape" || name == "e") return v.is_markup() ? v : Value::markup(html_escape(v.str()));
  if (name == "forceescape") return Value::markup(html_escape(v.str()));
  if (name == "first") {
    if (v.is_generator()) {  // reads one item
      std::optional<Value> x = v.next_item();
      return x ? *x : Value::undefined("No first item, sequence was empty.");
    }
    const std::vector<Value> items = v.iterate();
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
  }
  if (name == "last") {  // jinja2: next(iter(reversed(value)))
    if (v.is_generator()) fail("'generator' object is not reversible");
    const std::vector<Value> items = v.iterate();
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
  }
  if (name == "filesizeformat") return do_filesizeformat(v, a);
  if (name == "float") return do_float(v, a);
  if (name == "format") {  // jinja2's: str(value) % (kwargs or args)
    if (!raw.positional.empty() && !raw.keyword.empty()) fail("can't handle positional and keyword arguments at the same time");
    if (raw.keyword.empty()) return binary_op("%", v.is_markup() ? v : Value(v.str()), Value(raw.positional, true));
    Value named = Value::dict();
    for (const auto& [k, x] : raw.keyword) named.dict_object().set(Value(k), x);
    return binary_op("%", v.is_markup() ? v : Value(v.str()), named);
  }
  if (name == "groupby") {
    // jinja2's: sorted by the attribute (case-folded unless case_sensitive), consecutive equal
    // keys grouped into (grouper, list) named tuples; grouper is the first item's own value.
    const Value attribute = a.get(0, "attribute");
    if (attribute.is_undefined()) fail("groupby() missing 1 required positional argument: 'attribute'");
    const Value def = a.get(1, "default", Value::none());
    const bool cs = a.flag(2, "case_sensitive", false);
    const std::string path = attribute.is_string() ? attribute.as_string() : attribute.str();
    auto key = [&](const Value& x) { return attr_path(x, path, def.is_none() ? Value() : def); };
    std::vector<Value> out;
    std::vector<Value> group;
    Value group_key;
    auto close = [&] {
      if (group.empty()) return;
      out.push_back(Value::named_tuple({key(group.front()), Value(std::move(group))}, {"grouper", "list"}));
      group.clear();
    };
    for (const Value& x : sorted(v.iterate(), [&](const Value& y) { return fold_case(key(y), cs); }, false)) {
      const Value k = fold_case(key(x), cs);
      if (!group.empty() && !values_equal(k, group_key)) close();
      group_key = k;
      group.push_back(x);
    }
    close();
    return Value(std::move(out));
  }
  if (name == "indent") return do_indent(v, a);
  if (name == "int") return do_int(v, a);
  if (name == "items") {
    if (v.is_undefined()) return Value(std::vector<Value>{});
    if (!v.is_dict()) fail("items(): can only get item pairs from a mapping, not " + v.type_name());
    std::vector<Value> out;
    for (const auto& [k, x] : v.dict_object().items) out.emplace_back(std::vector<Value>{k, x}, true);
    return Value(std::move(out));
  }
  if (name == "join") return do_join(v, a);
  if (name == "list") return Value(v.iterate());
  if (name == "lower") return Value(py::lower(v.str()));
  if (name == "upper") return Value(py::upper(v.str()));
  if (name == "map") return do_map(v, a, raw);
  if (name == "max" || name == "min") return min_max(v, a, name == "max");
  if (name == "pprint") return Value(pformat(v));
  if (name == "reject") return do_select(v, raw, false, false);
  if (name == "select") return do_select(v, raw, true, false);
  if (name == "rejectattr") return do_select(v, raw, false, true);
  if (name == "selectattr") return do_select(v, raw, true, true);
  if (name == "replace") {
    const Value count = a.get(2, "count");
    return Value(py::replace(v.str(), a.get(0, "old").str(), a.get(1, "new").str(), count.is_undefined() || count.is_none() ? -1 : count.as_int()));
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::u32string u = py::decode(v.as_string());
      std::reverse(u.begin(), u.end());
      return Value(py::encode(u));
    }
    std::vector<Value> items = v.iterate();
    std::reverse(items.begin(), items.end());
    return Value(std::move(items));
  }
  if (name == "round") return do_round(v, a);
  if (name == "safe") return v.is_markup() ? v : Value::markup(v.str());
  if (name == "slice") {  // jinja2's: `slices` columns, the first length % slices one longer
    const std::int64_t slices = a.integer(0, "slices", 0);
    if (slices <= 0) fail("slice(): slices must be positive");
    const Value fill = a.get(1, "fill_with", Value::none());
    const std::vector<Value> seq = v.iterate();
    check_list_size(static_cast<std::size_t>(slices), 0, "slice");
    const std::int64_t len = static_cast<std::int64_t>(seq.size()), per = len / slices, extra = len % slices;
    std::vector<Value> out;
    std::int64_t offset = 0;
    for (std::int64_t k = 0; k < slices; ++k) {
      const std::int64_t start = offset + k * per;
      if (k < extra) ++offset;
      const std::int64_t end = offset + (k + 1) * per;
      std::vector<Value> part(seq.begin() + start, seq.begin() + end);
      if (!fill.is_none() && k >= extra) part.push_back(fill);
      out.emplace_back(std::move(part));
    }
    return Value(std::move(out));
  }
  if (name == "sort") {
    const bool reverse = a.flag(0, "reverse", false), cs = a.flag(1, "case_sensitive", false);
    const Value attribute = a.get(2, "attribute");
    // jinja2's make_multi_attrgetter: "a,b" sorts by a, then b (the keys compared as a list).
    const std::vector<std::string> paths = attribute.is_string() ? py::split(attribute.as_string(), std::string(","))
                                                                  : std::vector<std::string>{};
    return Value(sorted(v.iterate(), [&](const Value& x) {
      if (paths.size() > 1) {
        std::vector<Value> keys;
        for (const std::string& path : paths) keys.push_back(fold_case(attr_path(x, path), cs));
        return Value(std::move(keys));
      }
      return fold_case(attribute.is_undefined() ? x : attr_path(x, attribute.str()), cs);
    }, reverse));
  }
  if (name == "string") return Value(v.str());
  if (name == "sum") {
    const Value attribute = a.get(0, "attribute");
    Value total = a.get(1, "start", Value(0));
    for (const Value& x : v.iterate()) total = binary_op("+", total, attribute.is_undefined() ? x : attr_path(x, attribute.str()));
    return total;
  }
  if (name == "title") {
    // jinja2's title: the text split after runs of "-", whitespace, "(", "{", "[", "<"; each
    // piece's first character upper-cased, the rest of it lower-cased (a final sigma included).
    const std::u32string u = py::decode(v.str());
    std::string out;
    std::size_t i = 0;
    while (i < u.size()) {
      auto sep = [](char32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c); };
      std::size_t j = i;
      while (j < u.size() && !sep(u[j])) ++j;
      while (j < u.size() && sep(u[j])) ++j;
      out += py::upper(py::encode(u.substr(i, 1))) + py::lower(py::encode(u.substr(i + 1, j - i - 1)));
      i = j;
    }
    return Value(out);
  }
  if (name == "tojson") return do_tojson(v, raw);
  if (name == "trim") {
    const Value chars = a.get(0, "chars");
    return Value(py::strip(v.str(), true, true, chars.is_string() ? std::optional<std::string>(chars.as_string()) : std::nullopt));
  }
  if (name == "truncate") return do_truncate(v, a);
  if (name == "unique") {
    const bool cs = a.flag(0, "case_sensitive", false);
    const Value attribute = a.get(1, "attribute");
    // A Python set of the keys: 1, 1.0 and True are one key; a list or dict cannot be one.
    auto hash_key = [](const Value& k) -> std::optional<std::string> {
      if (k.is_string()) return "s" + k.as_string();
      if (k.is_none()) return std::string("N");
      if (k.is_int() || k.is_bool()) return "n" + std::to_string(k.as_int());
      if (k.is_float()) {
        const double d = k.as_double();
        if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.2e18) return "n" + std::to_string(static_cast<std::int64_t>(d));
        return "f" + python_float_repr(d);
      }
      return std::nullopt;
    };
    std::vector<Value> out;
    std::unordered_set<std::string> seen;
    for (const Value& x : v.iterate()) {
      const Value key = fold_case(attribute.is_undefined() ? x : attr_path(x, attribute.str()), cs);
      const auto h = hash_key(key);
      if (!h) fail("unhashable type: '" + key.type_name() + "'");
      if (seen.insert(*h).second) out.push_back(x);
    }
    return Value(std::move(out));
  }
  if (name == "urlencode") {
    if (!raw.positional.empty() || !raw.keyword.empty()) fail("do_urlencode() takes 1 positional argument");
    return do_urlencode(v);
  }
  if (name == "xmlattr") return do_xmlattr(v, a);
  if (name == "wordcount") {
    std::int64_t n = 0;
    bool in_word = false;
    for (char32_t c : py::decode(v.str())) {
      const bool w = py::is_word(c);  // Python's regex \w
      if (w && !in_word) ++n;
      in_word = w;
    }
    return Value(n);
  }
  fail("No filter named '" + name + "' found.");
}

const std::vector<std::string>& filter_names() {
  static const std::vector<std::string> k = {
      "abs", "attr", "batch", "capitalize", "center", "count", "length", "default", "d", "dictsort", "escape", "e",
      "forceescape", "first", "last", "float", "format", "groupby", "indent", "int", "items", "join", "list", "lower", "upper",
      "map", "max", "min", "pprint", "reject", "select", "rejectattr", "selectattr", "replace", "reverse", "round",
      "safe", "slice", "sort", "string", "sum", "title", "tojson", "trim", "truncate", "unique", "wordcount", "filesizeformat", "urlencode", "xmlattr"};
  return k;
}

const std::vector<std::string>& test_names() {
  static const std::vector<std::string> k = {
      "boolean", "callable", "defined", "undefined", "divisibleby", "eq", "equalto", "==", "ne", "!=", "even", "odd",
      "false", "true", "float", "integer", "number", "in", "iterable", "lower", "upper", "lt", "lessthan", "<", "le",
      "<=", "gt", "greaterthan", ">", "ge", ">=", "mapping", "none", "sameas", "sequence", "string", "filter", "test",
      "escaped"};
  return k;
}

}  // namespace

bool has_filter(const std::string& name) {
  const auto& k = filter_names();
  return std::find(k.begin(), k.end(), name) != k.end();
}

bool has_test(const std::string& name) {
  const auto& k = test_names();
  return std::find(k.begin(), k.end(), name) != k.end();
}

Value apply_filter(const std::string& name, const Value& input, CallArgs& args) {
  // jinja2's generators: these filters' lists behave as one (a string's reverse is a string).
  static const std::vector<std::string> kGenerators = {"batch", "items", "map", "reject", "rejectattr",
                                                        "reverse", "select", "selectattr", "slice", "unique"};
  const bool makes_generator = std::find(kGenerators.begin(), kGenerators.end(), name) != kGenerators.end();
  // A generator made from a generator reads it only when it is read itself (Value::feeds):
  // computed here from the items left, without reading them yet. (reverse and items refuse a
  // generator, as they should.)
  const bool lazy = makes_generator && input.is_generator() && name != "reverse" && name != "items";
  Value out;
  if (lazy) {
    const std::size_t read = input.items_read();
    const std::vector<Value>& all = input.list();
    out = do_filter(name, Value(std::vector<Value>(all.begin() + static_cast<std::ptrdiff_t>(read), all.end())), args);
  } else {
    out = do_filter(name, input, args);
  }
  // These call Markup's own methods on a Markup value (soft_str keeps it), which return Markup.
  static const std::vector<std::string> kKeepMarkup = {"capitalize", "center", "indent", "lower", "upper",
                                                        "string", "trim", "truncate", "reverse"};
  if (input.is_markup() && out.is_string() && !out.is_markup() &&
      std::find(kKeepMarkup.begin(), kKeepMarkup.end(), name) != kKeepMarkup.end()) {
    return Value::markup(out.as_string());
  }
  if (out.is_list() && !out.is_tuple() && makes_generator) {
    Value g = Value::generator(out.list());
    if (lazy) input.feeds(g);
    return g;
  }
  return out;
}

bool apply_test(const std::string& name, const Value& v, CallArgs& raw) {
  Args a(raw, name);
  const Value other = a.get(0, "value");
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict() && !v.dict_object().is_namespace;
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "callable") return v.is_callable() || v.is_undefined();
  if (name == "iterable") return v.is_undefined() || v.is_string() || v.is_list() || (v.is_dict() && !v.dict_object().is_namespace);
  if (name == "sequence") {
    return v.is_undefined() || v.is_string() || (v.is_list() && (!v.is_iterator_like() || v.view_type() == "range")) ||
           (v.is_dict() && !v.dict_object().is_namespace);
  }
  if (name == "escaped") return v.is_markup();  // jinja2: hasattr(value, "__html__")
  if (name == "lower" || name == "upper") {  // jinja2: str(value).islower() / .isupper()
    const std::string t = v.str();
    return name == "lower" ? py::lower(t) == t && py::upper(t) != t : py::upper(t) == t && py::lower(t) != t;
  }
  if (name == "odd" || name == "even") {
    require_defined(v);
    if (!v.is_number()) fail("'" + v.type_name() + "' is not a number (test " + name + ")");
    if (v.is_float()) {  // Python's float % 2 takes the divisor's sign
      double r = std::fmod(v.as_double(), 2.0);
      if (r < 0) r += 2.0;
      return name == "odd" ? r == 1.0 : r == 0.0;
    }
    const std::int64_t r = ((v.as_int() % 2) + 2) % 2;
    return name == "odd" ? r == 1 : r == 0;
  }
  if (name == "divisibleby") {
    if (!other.is_number() || other.as_double() == 0) fail("divisibleby: needs a non-zero number");
    return v.is_float() || other.is_float() ? std::fmod(v.as_double(), other.as_double()) == 0 : v.as_int() % other.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return values_equal(v, other);
  if (name == "ne" || name == "!=") return !values_equal(v, other);
  if (name == "lt" || name == "lessthan" || name == "<") return values_less(v, other);
  if (name == "gt" || name == "greaterthan" || name == ">") return values_less(other, v);
  if (name == "le" || name == "<=") return !values_less(other, v);
  if (name == "ge" || name == ">=") return !values_less(v, other);
  if (name == "in") return contains(other, v);
  if (name == "sameas") {  // Python's `is`: the same object (each undefined is its own)
    if (v.type() != other.type() || v.is_undefined()) return false;
    if (v.is_list()) return &v.list() == &other.list();
    if (v.is_dict()) return &v.dict_object() == &other.dict_object();
    if (v.is_callable()) return &v.callable() == &other.callable();
    return values_equal(v, other);
  }
  if (name == "filter") return v.is_string() && has_filter(v.as_string());
  if (name == "test") return v.is_string() && has_test(v.as_string());
  fail("No test named '" + name + "' found.");
}

bool contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::kString:
      if (!item.is_string()) fail("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::kList:
      if (container.is_generator()) {  // reads up to the item found (all when it is not there)
        while (std::optional<Value> x = container.next_item()) {
          if (values_equal(*x, item)) return true;
        }
        return false;
      }
      return std::any_of(container.list().begin(), container.list().end(), [&](const Value& x) { return values_equal(x, item); });
    case Value::Type::kDict:
      if (item.is_list() || item.is_dict()) fail("unhashable type: '" + item.type_name() + "'");
      return container.dict_object().find(item) != nullptr;
    case Value::Type::kUndefined: return false;
    default: fail("argument of type '" + container.type_name() + "' is not iterable");
  }
}

Value make_globals(const std::function<std::tm()>& now) {
  Value g = Value::dict();
  DictObject& d = g.dict_object();
  d.set(Value("range"), Value::function("range", [](CallArgs& c) {
    std::vector<std::int64_t> n;
    for (const Value& v : c.positional) {
      if (!v.is_int() && !v.is_bool()) fail("range(): '" + v.type_name() + "' object cannot be interpreted as an integer");
      n.push_back(v.as_int());
    }
    if (n.empty() || n.size() > 3) fail("range() takes 1 to 3 arguments");
    const std::int64_t start = n.size() == 1 ? 0 : n[0], stop = n.size() == 1 ? n[0] : n[1], step = n.size() == 3 ? n[2] : 1;
    if (step == 0) fail("range() arg 3 must not be zero");
    std::vector<Value> out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop;) {
      out.emplace_back(i);
      if (out.size() > 100000) fail("range(): too many items (the limit is 100000)");
      if (__builtin_add_overflow(i, step, &i)) break;  // past the 64-bit range: past stop too
    }
    return Value::range(start, stop, step, std::move(out));
  }));
  auto make_dict = [](CallArgs& c, bool ns) {
    Value r = Value::dict();
    r.dict_object().is_namespace = ns;
    for (const Value& p : c.positional) {
      if (!p.is_dict()) fail(std::string(ns ? "namespace" : "dict") + "(): positional argument must be a mapping");
      for (const auto& [k, v] : p.dict_object().items) r.dict_object().set(k, v);
    }
    for (const auto& [k, v] : c.keyword) r.dict_object().set(Value(k), v);
    return r;
  };
  d.set(Value("dict"), Value::function("dict", [make_dict](CallArgs& c) { return make_dict(c, false); }));
  d.set(Value("namespace"), Value::function("namespace", [make_dict](CallArgs& c) {
    Value ns = make_dict(c, true);
    if (RenderBudget* b = RenderBudget::current()) b->adopt(ns);
    return ns;
  }));
  d.set(Value("raise_exception"), Value::function("raise_exception", [](CallArgs& c) -> Value {
    fail("the template raised an error: " + (c.positional.empty() ? std::string() : c.positional[0].str()));
  }));
  d.set(Value("strftime_now"), Value::function("strftime_now", [now](CallArgs& c) {
    if (c.positional.empty() || !c.positional[0].is_string()) fail("strftime_now(): needs a format string");
    // transformers formats a naive datetime.now(): %Z and %z print nothing.
    const std::string& f = c.positional[0].as_string();
    std::string format;
    for (std::size_t i = 0; i < f.size(); ++i) {
      if (f[i] == '%' && i + 1 < f.size()) {
        if (f[i + 1] != 'Z' && f[i + 1] != 'z') format += f.substr(i, 2);
        ++i;
      } else {
        format += f[i];
      }
    }
    const std::tm t = now();
    char buf[512];
    const std::size_t n = format.empty() ? 0 : std::strftime(buf, sizeof buf, format.c_str(), &t);
    return Value(std::string(buf, n));
  }));
  d.set(Value("joiner"), Value::function("joiner", [](CallArgs& c) {
    const std::string sep = c.positional.empty() ? ", " : c.positional[0].str();
    auto used = std::make_shared<bool>(false);
    return Value::function("joiner", [sep, used](CallArgs&) { return Value(std::exchange(*used, true) ? sep : ""); });
  }));
  d.set(Value("cycler"), Value::function("cycler", [](CallArgs& c) {
    // next() returns `current` and moves it on; reset() moves it back to the first item.
    auto obj = std::make_shared<DictObject>();
    obj->is_namespace = true;
    const std::weak_ptr<DictObject> self = obj;  // the methods live in obj: no cycle
    auto items = std::make_shared<std::vector<Value>>(c.positional);
    auto pos = std::make_shared<std::size_t>(0);
    auto current = [items, pos] { return items->empty() ? Value::none() : (*items)[*pos % items->size()]; };
    obj->set(Value("current"), current());
    obj->set(Value("next"), Value::function("next", [self, items, pos, current](CallArgs&) {
      const Value r = current();
      ++*pos;
      if (auto o = self.lock()) o->set(Value("current"), current());
      return r;
    }));
    obj->set(Value("reset"), Value::function("reset", [self, pos, current](CallArgs&) {
      *pos = 0;
      if (auto o = self.lock()) o->set(Value("current"), current());
      return Value::none();
    }));
    return Value(obj);
  }));
  return g;
}

}  // namespace staticlm::jinja
