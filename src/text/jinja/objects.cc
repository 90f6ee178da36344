// Attribute and item lookup, slicing, operators, and the Python methods of str, dict and list
// (the read-only ones: the sandbox transformers uses refuses list.append and the like).
#include <algorithm>
#include <cmath>
#include <limits>

#include "text/jinja/builtins.h"
#include "text/jinja/format.h"
#include "text/jinja/limits.h"
#include "text/jinja/pystr.h"
#include "text/utf8.h"

namespace staticlm::jinja {
namespace {

// Bytes of the strings a list holds directly: what copying its items copies besides the items.
std::size_t string_bytes(const Value& list) {
  std::size_t n = 0;
  for (const Value& v : list.list()) n += v.is_string() ? v.as_string().size() : 0;
  return n;
}

std::optional<std::string> opt_str(const CallArgs& c, std::size_t i) {
  if (i < c.positional.size() && c.positional[i].is_string()) return c.positional[i].as_string();
  return std::nullopt;
}

std::int64_t opt_int(const CallArgs& c, std::size_t i, std::int64_t def) {
  return i < c.positional.size() && c.positional[i].is_number() ? c.positional[i].as_int() : def;
}

const Value& arg(const CallArgs& c, std::size_t i, const std::string& method) {
  if (i >= c.positional.size()) fail(method + "() takes at least " + std::to_string(i + 1) + " argument(s)");
  return c.positional[i];
}

// prefix may be a string or a tuple of strings.
bool affix_match(const std::string& s, const Value& affix, bool start, const std::string& method) {
  std::vector<Value> options = affix.is_list() ? affix.list() : std::vector<Value>{affix};
  for (const Value& o : options) {
    if (!o.is_string()) fail(method + " first arg must be str or a tuple of str, not " + o.type_name());
    const std::string& a = o.as_string();
    if (a.size() <= s.size() && (start ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0)) {
      return true;
    }
  }
  return false;
}

std::vector<Value> strings(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  for (const auto& p : parts) out.emplace_back(p);
  return out;
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  const std::u32string u = py::decode(s);
  return !u.empty() && std::all_of(u.begin(), u.end(), pred);
}

Value string_method(const std::string& s, const std::string& m, CallArgs& c) {
  if (m == "upper") return Value(py::upper(s));
  if (m == "lower") return Value(py::lower(s));
  if (m == "strip" || m == "lstrip" || m == "rstrip") return Value(py::strip(s, m != "rstrip", m != "lstrip", opt_str(c, 0)));
  if (m == "split" || m == "rsplit") {
    std::optional<std::string> sep = opt_str(c, 0);
    std::int64_t maxsplit = opt_int(c, 1, -1);
    for (const auto& [k, v] : c.keyword) {
      if (k == "sep") sep = v.is_string() ? std::optional<std::string>(v.as_string()) : std::nullopt;
      if (k == "maxsplit") maxsplit = v.as_int();
    }
    return Value(strings(py::split(s, sep, maxsplit, m == "rsplit")));
  }
  if (m == "splitlines") {
    bool keepends = c.positional.size() > 0 && c.positional[0].truthy();
    for (const auto& [k, v] : c.keyword) {
      if (k == "keepends") keepends = v.truthy();
    }
    return Value(strings(py::splitlines(s, keepends)));
  }
  if (m == "startswith" || m == "endswith") {
    // s[start:end].startswith(affix): start and end are code point indices as in a slice.
    if (c.positional.size() <= 1) return Value(affix_match(s, arg(c, 0, m), m == "startswith", m));
    const std::u32string u = py::decode(s);
    const auto n = static_cast<std::int64_t>(u.size());
    auto index = [&](std::size_t i, std::int64_t def) {
      if (i >= c.positional.size() || c.positional[i].is_none()) return def;
      if (!c.positional[i].is_int() && !c.positional[i].is_bool()) {
        fail(m + "(): slice indices must be integers or None, not " + c.positional[i].type_name());
      }
      std::int64_t x = c.positional[i].as_int();
      if (x < 0) x = std::max<std::int64_t>(x + n, 0);
      return x;
    };
    const std::int64_t b = index(1, 0), e = std::min(index(2, n), n);
    if (b > n) return Value(false);  // Python: a start past the end matches nothing, not even ''.
    const std::string part = e > b ? py::encode(std::u32string_view(u).substr(static_cast<std::size_t>(b), static_cast<std::size_t>(e - b))) : "";
    return Value(affix_match(part, arg(c, 0, m), m == "startswith", m));
  }
  if (m == "replace") return Value(py::replace(s, arg(c, 0, m).str(), arg(c, 1, m).str(), opt_int(c, 2, -1)));
  if (m == "title") return Value(py::title(s));
  if (m == "capitalize") return Value(py::capitalize(s));
  if (m == "swapcase") return Value(py::swapcase(s));
  if (m == "casefold") return Value(py::casefold(s));
  if (m == "istitle") return Value(py::istitle(s));
  if (m == "expandtabs") {
    std::int64_t tabsize = opt_int(c, 0, 8);
    for (const auto& [k, v] : c.keyword) {
      if (k == "tabsize") tabsize = v.as_int();
    }
    check_width(tabsize, "expandtabs");
    // Each tab becomes at most tabsize spaces: bound the result before building it.
    const auto tabs = static_cast<std::size_t>(std::count(s.begin(), s.end(), '\t'));
    check_string_size(s.size() + saturated_product(tabs, static_cast<std::size_t>(std::max<std::int64_t>(tabsize, 0))),
                      "expandtabs");
    return Value(py::expandtabs(s, tabsize));
  }
  if (m == "partition" || m == "rpartition") {  // (head, sep, tail); an empty separator is an error
    const Value& sep = arg(c, 0, m);
    if (!sep.is_string()) fail("must be str, not " + sep.type_name());
    if (sep.as_string().empty()) fail("empty separator");
    const std::size_t at = m == "partition" ? s.find(sep.as_string()) : s.rfind(sep.as_string());
    std::vector<Value> parts;
    if (at == std::string::npos) {
      parts = m == "partition" ? std::vector<Value>{Value(s), Value(""), Value("")} : std::vector<Value>{Value(""), Value(""), Value(s)};
    } else {
      parts = {Value(s.substr(0, at)), sep, Value(s.substr(at + sep.as_string().size()))};
    }
    return Value(std::move(parts), true);
  }
  if (m == "find" || m == "rfind" || m == "index" || m == "rindex") {
    const std::int64_t r = py::find(s, arg(c, 0, m).str(), m[0] == 'r');
    if (r < 0 && (m == "index" || m == "rindex")) fail("substring not found");
    return Value(r);
  }
  if (m == "count") return Value(py::count(s, arg(c, 0, m).str()));
  if (m == "join") {
    std::string out;
    bool first = true;
    for (const Value& x : arg(c, 0, m).iterate()) {
      if (!x.is_string()) fail("join(): sequence item: expected str instance, " + x.type_name() + " found");
      check_string_size(out.size() + (first ? 0 : s.size()) + x.as_string().size(), "join", 0);
      if (!first) out += s;
      out += x.as_string();
      first = false;
    }
    return Value(out);
  }
  if (m == "format") return Value(brace_format(s, c));
  if (m == "isdigit") return Value(all_chars(s, py::is_digit));
  if (m == "isdecimal") return Value(all_chars(s, py::is_decimal));
  if (m == "isnumeric") return Value(all_chars(s, py::is_numeric));
  if (m == "isspace") return Value(all_chars(s, py::is_space));
  if (m == "isalpha") return Value(all_chars(s, py::is_alpha));
  if (m == "isalnum") return Value(all_chars(s, py::is_alnum));
  if (m == "islower") return Value(py::lower(s) == s && py::upper(s) != s);
  if (m == "isupper") return Value(py::upper(s) == s && py::lower(s) != s);
  if (m == "removeprefix" || m == "removesuffix") {
    const std::string a = arg(c, 0, m).str();
    if (m == "removeprefix" && s.compare(0, a.size(), a) == 0) return Value(s.substr(a.size()));
    if (m == "removesuffix" && !a.empty() && a.size() <= s.size() && s.compare(s.size() - a.size(), a.size(), a) == 0) {
      return Value(s.substr(0, s.size() - a.size()));
    }
    return Value(s);
  }
  if (m == "center" || m == "ljust" || m == "rjust" || m == "zfill") {
    if (!arg(c, 0, m).is_int() && !arg(c, 0, m).is_bool()) fail(m + "(): width must be an integer, not " + arg(c, 0, m).type_name());
    std::string fill_char = m == "zfill" ? "0" : " ";
    if (m != "zfill" && c.positional.size() > 1) {
      const Value& f = c.positional[1];
      if (!f.is_string() || utf8_length(f.as_string()) != 1) fail("The fill character must be exactly one character long");
      fill_char = f.as_string();
    }
    if (m == "center") return Value(py::center(s, arg(c, 0, m).as_int(), fill_char));
    const std::int64_t width = arg(c, 0, m).as_int(), len = static_cast<std::int64_t>(utf8_length(s));
    check_width(width, m.c_str());
    if (width <= len) return Value(s);
    const std::string fill = py::repeat(fill_char, width - len);
    if (m == "zfill" && !s.empty() && (s[0] == '-' || s[0] == '+')) return Value(s.substr(0, 1) + fill + s.substr(1));
    return Value(m == "ljust" ? s + fill : fill + s);
  }
  fail("'str' object has no attribute '" + m + "'");
}

// A string as Markup holds it: Markup as it is, anything else (str(x)) HTML-escaped.
std::string escaped(const Value& v) { return v.is_markup() ? v.as_string() : html_escape(v.str()); }

// A string result of the same kind (str or Markup) as `like`.
Value same_kind(const Value& like, std::string s) { return like.is_markup() ? Value::markup(std::move(s)) : Value(std::move(s)); }

// markupsafe 3's Markup methods: the ones it wraps return Markup (a list or tuple of Markup),
// escaping only replace's new text and the fill character of ljust / rjust / center; join
// escapes the items, format each field; the rest are str's.
Value markup_method(const std::string& s, const std::string& m, CallArgs& c) {
  static const std::vector<std::string> kWrapped = {
      "capitalize", "title", "lower", "upper", "casefold", "swapcase", "replace", "ljust", "rjust", "center", "lstrip",
      "rstrip", "strip", "expandtabs", "zfill", "removeprefix", "removesuffix", "split", "rsplit", "splitlines",
      "partition", "rpartition"};
  if (m == "join") {
    std::vector<Value> items;
    for (const Value& x : arg(c, 0, m).iterate()) items.push_back(Value(escaped(x)));
    CallArgs plain{{Value(std::move(items))}, {}};
    return Value::markup(string_method(s, m, plain).as_string());
  }
  if (m == "format") return Value::markup(brace_format(s, c, true));
  if (std::find(kWrapped.begin(), kWrapped.end(), m) == kWrapped.end()) return string_method(s, m, c);
  CallArgs escaped_args = c;
  const bool fills = m == "ljust" || m == "rjust" || m == "center";
  if ((m == "replace" || fills) && escaped_args.positional.size() > 1 && escaped_args.positional[1].is_string()) {
    escaped_args.positional[1] = Value(escaped(escaped_args.positional[1]));
  }
  const Value r = string_method(s, m, escaped_args);
  if (r.is_string()) return Value::markup(r.as_string());
  std::vector<Value> parts;
  for (const Value& x : r.list()) parts.push_back(Value::markup(x.as_string()));
  return Value(std::move(parts), r.is_tuple());
}

Value dict_method(const Value& d, const std::string& m, CallArgs& c) {
  const auto& items = d.dict_object().items;
  if (m == "items") {
    std::vector<Value> out;
    for (const auto& [k, v] : items) out.emplace_back(std::vector<Value>{k, v}, true);
    return Value::dict_view(std::move(out), "dict_items");
  }
  if (m == "keys" || m == "values") {
    std::vector<Value> out;
    for (const auto& [k, v] : items) out.push_back(m == "keys" ? k : v);
    return Value::dict_view(std::move(out), "dict_" + m);
  }
  if (m == "get") {
    const Value* v = d.dict_object().find(arg(c, 0, m));
    if (v != nullptr) return *v;
    return c.positional.size() > 1 ? c.positional[1] : Value::none();
  }
  if (m == "copy") {  // shallow, as Python's
    Value out = Value::dict();
    out.dict_object().items = items;
    return out;
  }
  fail("'dict' object has no attribute '" + m + "'");
}

Value list_method(const Value& l, const std::string& m, CallArgs& c) {
  const auto& items = l.list();
  if (m == "index") {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (values_equal(items[i], arg(c, 0, m))) return Value(static_cast<std::int64_t>(i));
    }
    fail(arg(c, 0, m).repr() + " is not in list");
  }
  if (m == "count") {
    return Value(static_cast<std::int64_t>(
        std::count_if(items.begin(), items.end(), [&](const Value& x) { return values_equal(x, arg(c, 0, m)); })));
  }
  if (m == "copy" && l.type_name() == "list") return Value(std::vector<Value>(items));  // shallow
  fail("'" + l.type_name() + "' object has no attribute '" + m + "'");
}

bool is_method(const Value& obj, const std::string& name) {
  static const std::vector<std::string> kStr = {
      "upper", "lower", "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
      "replace", "title", "capitalize", "find", "rfind", "index", "rindex", "count", "join", "format", "isdigit",
      "isdecimal", "isnumeric", "isspace", "isalpha", "isalnum", "islower", "isupper", "removeprefix", "removesuffix",
      "center", "ljust", "rjust", "zfill", "swapcase", "casefold", "istitle", "expandtabs", "partition", "rpartition"};
  static const std::vector<std::string> kDict = {"items", "keys", "values", "get", "copy"};
  static const std::vector<std::string> kList = {"index", "count", "copy"};
  const auto* names = obj.is_string() ? &kStr : obj.is_list() ? &kList : obj.is_dict() && !obj.dict_object().is_namespace ? &kDict : nullptr;
  if (obj.is_list() && obj.type_name() != "list" && name == "copy") return false;
  return names != nullptr && std::find(names->begin(), names->end(), name) != names->end();
}

Value bind_method(const Value& obj, const std::string& name) {
  return Value::function(name, [obj, name](CallArgs& c) {
    if (obj.is_markup()) return markup_method(obj.as_string(), name, c);
    if (obj.is_string()) return string_method(obj.as_string(), name, c);
    if (obj.is_dict()) return dict_method(obj, name, c);
    return list_method(obj, name, c);
  });
}

// jinja2's object_type_repr; a missing attribute quotes it, a missing element does not.
std::string type_repr(const Value& obj) { return obj.is_none() ? "None" : obj.type_name() + " object"; }
std::string no_attribute(const Value& obj, const std::string& name) {
  return "'" + type_repr(obj) + "' has no attribute '" + name + "'";
}

// Python's slice.indices(len).
void slice_indices(std::int64_t len, const Value& start, const Value& stop, const Value& step, std::int64_t& b,
                   std::int64_t& e, std::int64_t& s) {
  auto given = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
  s = given(step) ? step.as_int() : 1;
  if (s == 0) fail("slice step cannot be zero");
  auto clamp = [&](const Value& v, std::int64_t def) {
    if (!given(v)) return def;
    std::int64_t x = v.as_int();
    if (x < 0) x += len;
    if (s > 0) return std::clamp<std::int64_t>(x, 0, len);
    return std::clamp<std::int64_t>(x, -1, len - 1);
  };
  b = clamp(start, s > 0 ? 0 : len - 1);
  e = clamp(stop, s > 0 ? len : -1);
}

}  // namespace

// transformers renders in jinja2's ImmutableSandboxedEnvironment, which refuses the methods that
// change a list or dict in place (an undefined value that fails when used, naming the reason);
// pop and clear of a list too since jinja2 3.1.5.
bool modifies_in_place(const Value& obj, const std::string& name) {
  static const std::vector<std::string> kList = {"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove"};
  static const std::vector<std::string> kDict = {"clear", "pop", "popitem", "setdefault", "update"};
  const auto* names = obj.is_list() ? &kList : obj.is_dict() && !obj.dict_object().is_namespace ? &kDict : nullptr;
  return names != nullptr && std::find(names->begin(), names->end(), name) != names->end();
}

Value get_attr(const Value& obj, const std::string& name) {
  require_defined(obj);
  if (modifies_in_place(obj, name)) {
    return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.");
  }
  if (obj.is_dict()) {
    if (is_method(obj, name)) return bind_method(obj, name);
    if (const Value* v = obj.dict_object().find(std::string_view(name))) return *v;
    return Value::undefined(no_attribute(obj, name));
  }
  const std::vector<std::string>& fields = obj.tuple_fields();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (fields[i] == name) return obj.list()[i];
  }
  if (is_method(obj, name)) return bind_method(obj, name);
  return Value::undefined(no_attribute(obj, name));
}

Value get_item(const Value& obj, const Value& key) {
  require_defined(obj);
  // Python: a generator or dict view is not subscriptable (jinja2: an undefined value).
  if (obj.is_iterator_like() && obj.view_type() != "range") return Value::undefined("'" + obj.type_name() + "' object is not subscriptable");
  if (obj.is_dict()) {
    if (const Value* v = obj.dict_object().find(key)) return *v;
  } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    std::int64_t i = key.as_int();
    if (obj.is_list()) {
      const auto n = static_cast<std::int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list()[static_cast<std::size_t>(i)];
    } else {
      const std::u32string u = py::decode(obj.as_string());
      const auto n = static_cast<std::int64_t>(u.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return same_kind(obj, py::encode(u.substr(static_cast<std::size_t>(i), 1)));
    }
    return Value::undefined(type_repr(obj) + " has no element " + key.repr());
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined(type_repr(obj) + " has no element " + key.repr());
}

Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  require_defined(obj);
  if (!obj.is_list() && !obj.is_string()) fail("'" + obj.type_name() + "' object is not subscriptable");
  if (obj.is_iterator_like() && obj.view_type() != "range") return Value::undefined("'" + obj.type_name() + "' object is not subscriptable");
  // Python refuses other indices with a TypeError, which jinja2's subscript turns into an
  // undefined value (printed empty).
  for (const Value* x : {&start, &stop, &step}) {
    if (!x->is_undefined() && !x->is_none() && !x->is_int() && !x->is_bool()) {
      return Value::undefined("slice indices must be integers or None, not " + x->type_name());
    }
  }
  const std::u32string u = obj.is_string() ? py::decode(obj.as_string()) : std::u32string();
  const auto len = static_cast<std::int64_t>(obj.is_string() ? u.size() : obj.list().size());
  std::int64_t b, e, s;
  slice_indices(len, start, stop, step, b, e, s);
  std::vector<Value> items;
  std::u32string chars;
  for (std::int64_t i = b; s > 0 ? i < e : i > e; i += s) {
    if (obj.is_string()) chars += u[static_cast<std::size_t>(i)];
    else items.push_back(obj.list()[static_cast<std::size_t>(i)]);
  }
  if (obj.is_string()) return same_kind(obj, py::encode(chars));
  if (obj.view_type() == "range") {  // a range's slice is a range
    const std::int64_t* r = obj.range_args();
    return Value::range(checked_int("+", r[0], checked_int("*", b, r[2])), checked_int("+", r[0], checked_int("*", e, r[2])),
                        checked_int("*", r[2], s), std::move(items));
  }
  return Value(std::move(items), obj.is_tuple());
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string x = a.str();
    const std::string y = b.str();
    check_string_size(x.size() + y.size(), "~");
    return Value(x + y);
  }
  require_defined(a);
  require_defined(b);
  const std::string types = "'" + a.type_name() + "' and '" + b.type_name() + "'";
  if (op == "%" && a.is_markup()) return Value::markup(percent_format(a.as_string(), b, true));
  if (op == "%" && a.is_string()) return Value(percent_format(a.as_string(), b));
  if (op == "+") {
    if (a.is_markup() || (a.is_string() && b.is_markup())) {  // Markup + str escapes the str
      if (!b.is_string()) fail("unsupported operand type(s) for +: " + types);
      const std::string x = escaped(a), y = escaped(b);
      check_string_size(x.size() + y.size(), "+");
      return Value::markup(x + y);
    }
    if (a.is_string() && b.is_string()) {
      check_string_size(a.as_string().size() + b.as_string().size(), "+");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() && !a.is_iterator_like() && !b.is_iterator_like()) {
      check_list_size(a.list().size() + b.list().size(), string_bytes(a) + string_bytes(b), "+");
      std::vector<Value> items = a.list();
      items.insert(items.end(), b.list().begin(), b.list().end());
      return Value(std::move(items), a.is_tuple());
    }
  }
  if (op == "*" && (a.is_string() || a.is_list() || b.is_string() || b.is_list())) {
    const Value& seq = a.is_string() || a.is_list() ? a : b;
    const Value& n = a.is_string() || a.is_list() ? b : a;
    if (!n.is_int() && !n.is_bool()) fail("can't multiply sequence by non-int of type '" + n.type_name() + "'");
    const std::int64_t times = std::max<std::int64_t>(0, n.as_int());
    const auto count = static_cast<std::size_t>(times);
    if (seq.is_string()) check_string_size(saturated_product(seq.as_string().size(), count), "*");
    else check_list_size(saturated_product(seq.list().size(), count), saturated_product(string_bytes(seq), count), "*");
    if (seq.is_string()) {
      std::string out;
      for (std::int64_t i = 0; i < times; ++i) out += seq.as_string();
      return seq.is_markup() ? Value::markup(out) : Value(out);
    }
    std::vector<Value> items;
    for (std::int64_t i = 0; i < times; ++i) items.insert(items.end(), seq.list().begin(), seq.list().end());
    return Value(std::move(items), seq.is_tuple());
  }
  if (!a.is_number() || !b.is_number()) fail("unsupported operand type(s) for " + op + ": " + types);
  const bool ints = !a.is_float() && !b.is_float();
  const double x = a.as_double(), y = b.as_double();
  if (op == "+") return ints ? Value(checked_int("+", a.as_int(), b.as_int())) : Value(x + y);
  if (op == "-") return ints ? Value(checked_int("-", a.as_int(), b.as_int())) : Value(x - y);
  if (op == "*") return ints ? Value(checked_int("*", a.as_int(), b.as_int())) : Value(x * y);
  if (op == "/") {
    if (y == 0) fail("division by zero");
    return Value(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0) fail(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      const std::int64_t p = a.as_int(), q = b.as_int();
      // The one quotient that does not fit (and traps on x86).
      if (p == std::numeric_limits<std::int64_t>::min() && q == -1) {
        if (op == "%") return Value(0);
        checked_int("*", p, q);
      }
      std::int64_t d = p / q, r = p % q;
      if (r != 0 && ((r < 0) != (q < 0))) {
        --d;
        r += q;
      }
      return op == "//" ? Value(d) : Value(r);
    }
    // Python's float divmod: the quotient from the exact remainder (4 // 0.1 is 39.0, where
    // floor(4 / 0.1) is 40), and the signs of zero results as Python gives them.
    double r = std::fmod(x, y), d = (x - r) / y;
    if (r != 0) {
      if ((y < 0) != (r < 0)) {
        r += y;
        d -= 1.0;
      }
    } else {
      r = std::copysign(0.0, y);
    }
    if (d != 0) {
      const double f = std::floor(d);
      d = d - f > 0.5 ? f + 1.0 : f;
    } else {
      d = std::copysign(0.0, x / y);
    }
    return op == "//" ? Value(d) : Value(r);
  }
  if (op == "**") {
    if (ints && b.as_int() >= 0) return Value(checked_int("**", a.as_int(), b.as_int()));
    if (x == 0 && y < 0) fail("ZeroDivisionError: 0.0 cannot be raised to a negative power");
    return Value(std::pow(x, y));
  }
  fail("unknown operator " + op);
}

}  // namespace staticlm::jinja
