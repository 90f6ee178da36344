#include "text/jinja/value.h"

#include "text/jinja/pystr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "text/jinja/limits.h"
#include "text/jinja/pystr.h"
#include "text/utf8.h"

namespace staticlm::jinja {

void fail(const std::string& message) { throw TemplateError{message}; }

void Value::not_an_integer() const {
  require_defined(*this);
  fail("'" + type_name() + "' object cannot be interpreted as an integer");
}

void require_defined(const Value& v) {
  if (v.is_undefined()) fail(v.undefined_hint().empty() ? "undefined value" : v.undefined_hint());
}

const Value* DictObject::find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (values_equal(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictObject::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

namespace {

// Lists and dicts are built from values that already exist, so their depth is known when they
// are made; past the limit, printing or freeing them would recurse too deep.
int checked_depth(int depth) {
  if (depth > kMaxDataDepth) fail("lists and dicts nested more than " + std::to_string(kMaxDataDepth) + " deep (the limit)");
  return depth;
}

}  // namespace

int Value::nesting() const {
  if (is_list()) return std::get<std::shared_ptr<ListObject>>(v_)->depth;
  if (is_dict()) return dict_object().depth;
  return 0;
}

void DictObject::set(Value key, Value value) {
  depth = std::max(depth, checked_depth(1 + std::max(key.nesting(), value.nesting())));
  for (auto& [k, v] : items) {
    if (values_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value::Value(std::vector<Value> items, bool tuple) {
  auto l = std::make_shared<ListObject>();
  for (const Value& v : items) l->depth = std::max(l->depth, checked_depth(1 + v.nesting()));
  l->items = std::move(items);
  l->is_tuple = tuple;
  v_ = std::move(l);
}

Value Value::markup(std::string s) {
  Value v;
  v.v_ = std::make_shared<const StringObject>(StringObject{std::move(s), true});
  return v;
}

Value Value::generator(std::vector<Value> items) {
  Value g(std::move(items));
  std::get<std::shared_ptr<ListObject>>(g.v_)->is_generator = true;
  return g;
}

Value Value::dict_view(std::vector<Value> items, std::string type) {
  Value v(std::move(items));
  std::get<std::shared_ptr<ListObject>>(v.v_)->view = std::move(type);
  return v;
}

Value Value::range(std::int64_t start, std::int64_t stop, std::int64_t step, std::vector<Value> items) {
  Value v(std::move(items));
  auto& l = *std::get<std::shared_ptr<ListObject>>(v.v_);
  l.view = "range";
  l.range_args[0] = start;
  l.range_args[1] = stop;
  l.range_args[2] = step;
  return v;
}

const std::string& Value::view_type() const {
  static const std::string kNone;
  return is_list() ? std::get<std::shared_ptr<ListObject>>(v_)->view : kNone;
}

Value Value::named_tuple(std::vector<Value> items, std::vector<std::string> fields) {
  Value t(std::move(items), true);
  std::get<std::shared_ptr<ListObject>>(t.v_)->fields = std::move(fields);
  return t;
}

const std::vector<std::string>& Value::tuple_fields() const {
  static const std::vector<std::string> kNone;
  return is_list() ? std::get<std::shared_ptr<ListObject>>(v_)->fields : kNone;
}

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn, std::string repr) {
  Value v;
  v.v_ = std::make_shared<CallableObject>(CallableObject{std::move(name), std::move(fn), std::move(repr)});
  return v;
}

Value Value::dict() { return Value(std::make_shared<DictObject>()); }

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) fail("integer " + std::to_string(u) + " does not fit in 64 bits (the limit)");
      return Value(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& e : j) items.push_back(from_json(e));
      return Value(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value d = dict();
      DictObject& o = d.dict_object();
      for (auto it = j.begin(); it != j.end(); ++it) {
        Value v = from_json(it.value());
        o.depth = std::max(o.depth, checked_depth(1 + v.nesting()));
        o.items.emplace_back(Value(it.key()), std::move(v));  // JSON keys are unique: no search
      }
      return d;
    }
    default: return Value();
  }
}

bool Value::truthy() const {
  switch (type()) {
    case Type::kUndefined:
    case Type::kNone: return false;
    case Type::kBool: return as_bool();
    case Type::kInt: return as_int() != 0;
    case Type::kFloat: return as_double() != 0.0;
    case Type::kString: return !as_string().empty();
    case Type::kList: return is_generator() || !list().empty();
    case Type::kDict: return dict_object().is_namespace || !dict_object().items.empty();
    case Type::kCallable: return true;
  }
  return false;
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string s(buf, r.ptr);
  const std::size_t e_pos = s.find('e');
  std::string mant = s.substr(0, e_pos);
  const int exp = std::stoi(s.substr(e_pos + 1));
  std::string sign;
  if (mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  std::string out = sign;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const std::size_t int_len = static_cast<std::size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    } else {
      out += "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char e[16];
  std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + e;
}

namespace {

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char32_t c : py::decode(s)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!py::is_printable(c)) {
      // As Python: \xhh below U+0100, \uhhhh below U+10000, \Uhhhhhhhh above.
      char b[16];
      std::snprintf(b, sizeof b, c < 0x100 ? "\\x%02x" : c < 0x10000 ? "\\u%04x" : "\\U%08x", static_cast<unsigned>(c));
      out += b;
    } else {
      out += py::encode(std::u32string(1, c));
    }
  }
  return out + quote;
}

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  auto escape = [&](unsigned u) {
    char b[8];
    std::snprintf(b, sizeof b, "\\u%04x", u);
    out += b;
  };
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80 && ensure_ascii) {
      const char32_t cp = utf8_decode(s, i);
      if (cp >= 0x10000) {  // a UTF-16 surrogate pair, as Python writes it
        escape(0xD800 + ((cp - 0x10000) >> 10));
        escape(0xDC00 + ((cp - 0x10000) & 0x3FF));
      } else {
        escape(cp);
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (c == 0x7f && ensure_ascii)) {
          escape(c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonOptions& o, int depth) {
  // A namespace can hold itself: the depth check also ends a cycle.
  if (depth > kMaxDataDepth) fail("tojson: lists and dicts nested more than " + std::to_string(kMaxDataDepth) + " deep (the limit)");
  check_string_size(out.size(), "tojson", 0);
  const std::string item_sep = o.item_sep ? *o.item_sep : o.indent ? "," : ", ";
  const std::string key_sep = o.key_sep ? *o.key_sep : ": ";
  auto newline = [&](int d) {
    if (!o.indent) return;
    const std::size_t bytes = saturated_product(o.indent->size(), static_cast<std::size_t>(d));
    check_string_size(out.size() + 1 + bytes, "tojson", 0);
    out += '\n';
    for (int i = 0; i < d; ++i) out += *o.indent;
  };
  // Python's json writes lists, tuples and dicts only (a namespace is none of them).
  if ((v.is_list() && v.is_iterator_like()) || (v.is_dict() && v.dict_object().is_namespace)) {
    fail("tojson: Object of type " + v.type_name() + " is not JSON serializable");
  }
  switch (v.type()) {
    case Value::Type::kNone: out += "null"; return;
    case Value::Type::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Type::kInt: out += std::to_string(v.as_int()); return;
    case Value::Type::kFloat: {
      const double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : python_float_repr(d);
      return;
    }
    case Value::Type::kString: json_string(out, v.as_string(), o.ensure_ascii); return;
    case Value::Type::kList: {
      const auto& items = v.list();
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        json_value(out, items[i], o, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Type::kDict: {
      auto items = v.dict_object().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return values_less(a.first, b.first); });
      }
      out += '{';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_sep;
        newline(depth + 1);
        const Value& k = items[i].first;
        if (k.is_string()) {
          json_string(out, k.as_string(), o.ensure_ascii);
        } else if (k.is_bool() || k.is_none() || k.is_int() || k.is_float()) {
          std::string key;
          json_value(key, k, {}, 0);
          json_string(out, key, o.ensure_ascii);
        } else {
          fail("tojson: keys must be str, int, float, bool or None, not " + k.type_name());
        }
        out += key_sep;
        json_value(out, items[i].second, o, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    case Value::Type::kUndefined: fail("tojson: Object of type Undefined is not JSON serializable");
    case Value::Type::kCallable: fail("tojson: Object of type function is not JSON serializable");
  }
}

}  // namespace

std::string Value::to_json(const JsonOptions& options) const {
  std::string out;
  json_value(out, *this, options, 0);
  return out;
}

std::string Value::repr() const { return repr_at(0); }

std::string Value::repr_at(int depth) const {
  if (depth > kMaxDataDepth) fail("repr: lists and dicts nested more than " + std::to_string(kMaxDataDepth) + " deep (the limit)");
  switch (type()) {
    case Type::kUndefined: return "Undefined";
    case Type::kNone: return "None";
    case Type::kBool: return as_bool() ? "True" : "False";
    case Type::kInt: return std::to_string(as_int());
    case Type::kFloat: return python_float_repr(as_double());
    case Type::kString: return is_markup() ? "Markup(" + repr_string(as_string()) + ")" : repr_string(as_string());
    case Type::kList: {
      if (view_type() == "range") {
        const std::int64_t* r = range_args();
        return "range(" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + (r[2] != 1 ? ", " + std::to_string(r[2]) : "") + ")";
      }
      const auto& items = list();
      std::string out = is_tuple() ? "(" : "[";
      for (std::size_t i = 0; i < items.size(); ++i) {
        out += (i ? ", " : "") + items[i].repr_at(depth + 1);
        check_string_size(out.size(), "repr", 0);
      }
      if (is_tuple() && items.size() == 1) out += ",";
      out += is_tuple() ? ")" : "]";
      return view_type().empty() ? out : view_type() + "(" + out + ")";
    }
    case Type::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : dict_object().items) {
        out += (first ? "" : ", ") + k.repr_at(depth + 1) + ": " + v.repr_at(depth + 1);
        check_string_size(out.size(), "repr", 0);
        first = false;
      }
      out += "}";
      return dict_object().is_namespace ? "<Namespace " + out + ">" : out;
    }
    case Type::kCallable: return callable().repr.empty() ? "<function " + callable().name + ">" : callable().repr;
  }
  return "";
}

std::string Value::str() const {
  if (is_string()) return as_string();
  if (is_undefined()) return "";
  return repr();
}

std::string Value::type_name() const {
  switch (type()) {
    case Type::kUndefined: return "Undefined";
    case Type::kNone: return "NoneType";
    case Type::kBool: return "bool";
    case Type::kInt: return "int";
    case Type::kFloat: return "float";
    case Type::kString: return is_markup() ? "Markup" : "str";
    case Type::kList: return is_generator() ? "generator" : !view_type().empty() ? view_type() : is_tuple() ? "tuple" : "list";
    case Type::kDict: return dict_object().is_namespace ? "Namespace" : "dict";
    case Type::kCallable: return "function";
  }
  return "";
}

namespace {

// Whether what a generator was made from was read to its end after it was made: then nothing
// is left of it.
bool dried(const ListObject& g) {
  const ListObject* s = g.source.get();
  return s != nullptr && ((s->consumed > g.source_read && s->consumed >= s->items.size()) || dried(*s));
}

ListObject& settled(ListObject& g) {
  if (dried(g)) g.consumed = g.items.size();
  return g;
}

// Marks a generator's first n items read, and its sources wholly.
void read_to(ListObject& g, std::size_t n) {
  g.consumed = std::max(g.consumed, std::min(n, g.items.size()));
  // Read by this chain itself, so not "read after it was made".
  for (ListObject* d = &g; d->source != nullptr; d = d->source.get()) {
    d->source->consumed = d->source->items.size();
    d->source_read = d->source->consumed;
  }
}

}  // namespace

std::optional<Value> Value::next_item() const {
  if (!is_generator()) return std::nullopt;
  ListObject& g = settled(*std::get<std::shared_ptr<ListObject>>(v_));
  if (g.consumed >= g.items.size()) return std::nullopt;
  Value v = g.items[g.consumed];
  read_to(g, g.consumed + 1);
  return v;
}

std::size_t Value::items_read() const {
  return is_generator() ? settled(*std::get<std::shared_ptr<ListObject>>(v_)).consumed : 0;
}

void Value::set_items_read(std::size_t n) const {
  if (!is_generator()) return;
  ListObject& g = *std::get<std::shared_ptr<ListObject>>(v_);
  g.consumed = std::min(n, g.items.size());
  if (g.consumed > 0) read_to(g, g.consumed);
}

void Value::feeds(const Value& derived) const {
  if (is_generator() && derived.is_generator()) {
    ListObject& d = *std::get<std::shared_ptr<ListObject>>(derived.v_);
    d.source = std::get<std::shared_ptr<ListObject>>(v_);
    d.source_read = d.source->consumed;
  }
}

std::vector<Value> Value::iterate() const {
  switch (type()) {
    case Type::kUndefined: return {};
    case Type::kList: {
      if (!is_generator()) return list();
      ListObject& g = settled(*std::get<std::shared_ptr<ListObject>>(v_));
      std::vector<Value> rest(g.items.begin() + static_cast<std::ptrdiff_t>(g.consumed), g.items.end());
      read_to(g, g.items.size());
      return rest;
    }
    case Type::kDict: {
      std::vector<Value> keys;
      for (const auto& kv : dict_object().items) keys.push_back(kv.first);
      return keys;
    }
    case Type::kString: {
      std::vector<Value> chars;
      const std::string& s = as_string();
      check_list_items(s.size() > kMaxListItems ? utf8_length(s) : 0, "iterating over a string");
      for (std::size_t p = 0; p < s.size();) {
        const std::size_t start = p;
        utf8_decode(s, p);
        chars.emplace_back(s.substr(start, p - start));
      }
      return chars;
    }
    default: fail("'" + type_name() + "' object is not iterable");
  }
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone: return true;
    case Value::Type::kString: return a.as_string() == b.as_string();
    case Value::Type::kList: {
      const auto &x = a.list(), &y = b.list();
      if (a.is_generator() || b.is_generator()) return &x == &y;  // an iterator equals only itself
      if (a.view_type() != b.view_type()) return false;
      if (x.size() != y.size() || a.is_tuple() != b.is_tuple()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!values_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Type::kDict: {
      const auto &x = a.dict_object(), &y = b.dict_object();
      if (x.is_namespace || y.is_namespace) return &x == &y;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* w = y.find(k);
        if (w == nullptr || !values_equal(v, *w)) return false;
      }
      return true;
    }
    case Value::Type::kCallable: return &a.callable() == &b.callable();
    default: return false;
  }
}

bool values_less(const Value& a, const Value& b) {
  // An undefined value fails with its own message, as jinja2's Undefined does when compared.
  require_defined(a);
  require_defined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 order = code point order
  if (a.is_list() && b.is_list()) {
    const auto &x = a.list(), &y = b.list();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!values_equal(x[i], y[i])) return values_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  fail("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

}  // namespace staticlm::jinja

#include "base/error.h"

namespace staticlm::jinja {
void fail_at(const std::string& template_name, int line, const std::string& message) {
  invalid_file(template_name + ":" + std::to_string(line) + ": " + message);
}
}  // namespace staticlm::jinja
