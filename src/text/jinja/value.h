// The values a Jinja chat template computes with, modelled on the Python objects jinja2 sees:
// Undefined, None, bool, int, float, str, list / tuple, dict (insertion ordered), namespace and
// callables (macros, built-in functions, bound methods). Strings, lists and dicts are shared
// (copying a Value copies a pointer: a list that names one long string a thousand times holds it
// once); only a namespace is ever changed after it is made.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace staticlm::jinja {

class Value;

struct ListObject {
  std::vector<Value> items;
  bool is_tuple = false;
  // What jinja2 returns as a generator or iterator (select, map, unique, reverse, ...): always
  // true, no length, not a sequence; `list` turns it into a list. One-shot, as Python's: the
  // items before `consumed` were read already (a second loop over it finds none). Its items are
  // computed when it is made, from `source` (the generator it was made from, if any), which is
  // read only when this one is: then wholly (Python's lazy chain reads it as far as this one
  // goes, which is to the end unless only part of this one is read). A source read to its end
  // after this one was made leaves this one nothing.
  bool is_generator = false;
  std::size_t consumed = 0;
  std::shared_ptr<ListObject> source;
  std::size_t source_read = 0;  // source's items read when this one was made from it
  std::vector<std::string> fields;  // a named tuple's field names (groupby's grouper, list); else empty
  // Python objects held as their items: "dict_items", "dict_keys", "dict_values" (what a dict's
  // items() / keys() / values() return: not subscriptable, printed as dict_items([...])) or
  // "range" (range_args: start, stop, step); empty for a list or tuple. None is JSON.
  std::string view;
  std::int64_t range_args[3] = {0, 0, 1};
  int depth = 1;  // lists and dicts nested in this one, plus one (kMaxDataDepth bounds it)
};

// A string; `markup` is markupsafe's Markup (what |safe and |escape return): adding a plain
// string to it escapes that string, and |escape leaves it as it is.
struct StringObject {
  std::string text;
  bool markup = false;
};

struct DictObject {
  std::vector<std::pair<Value, Value>> items;  // insertion order, keys unique
  bool is_namespace = false;
  int depth = 1;  // as ListObject::depth; set() raises it, never lowers it
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);
};

// Arguments of a call: positional, then keyword (in the order written).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

struct CallableObject {
  std::string name;
  std::function<Value(CallArgs&)> fn;
  std::string repr;  // how it prints; "": <function NAME>
};

// An undefined value remembers what was looked up, for the error when it is used.
struct Undefined {
  std::string hint;  // "'x' is undefined", "'dict object' has no attribute 'y'"
};

// The arguments of Python's json.dumps that transformers' tojson filter passes.
struct JsonOptions {
  bool ensure_ascii = false;          // non-ASCII as \uXXXX (surrogate pairs past U+FFFF)
  std::optional<std::string> indent;  // none: one line; else a newline and the string per level
  std::optional<std::string> item_sep;  // none: ", " without indent, "," with
  std::optional<std::string> key_sep;   // none: ": "
  bool sort_keys = false;
};

class Value {
 public:
  enum class Type { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
  static Value none() { return Value(std::monostate{}); }
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<std::int64_t>(i)) {}
  Value(std::int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::make_shared<const StringObject>(StringObject{std::move(s)})) {}
  Value(const char* s) : v_(std::make_shared<const StringObject>(StringObject{s})) {}
  // A Markup string (see StringObject).
  static Value markup(std::string s);
  Value(std::vector<Value> items, bool tuple = false);
  // A tuple whose items are also attributes, by these names (Python's NamedTuple).
  static Value named_tuple(std::vector<Value> items, std::vector<std::string> fields);
  static Value generator(std::vector<Value> items);
  // A dict view (ListObject::view) of these items.
  static Value dict_view(std::vector<Value> items, std::string type);
  // range(start, stop, step) with its items.
  static Value range(std::int64_t start, std::int64_t stop, std::int64_t step, std::vector<Value> items);
  // ListObject::view ("" for anything else).
  const std::string& view_type() const;
  const std::int64_t* range_args() const { return std::get<std::shared_ptr<ListObject>>(v_)->range_args; }
  // A generator, dict view or range: what Python's json cannot write, and `+` does not take.
  bool is_iterator_like() const { return is_generator() || !view_type().empty(); }
  // The field names of a named tuple; empty for anything else.
  const std::vector<std::string>& tuple_fields() const;
  Value(std::shared_ptr<DictObject> d) : v_(std::move(d)) {}
  static Value function(std::string name, std::function<Value(CallArgs&)> fn, std::string repr = "");
  static Value dict();
  // JSON objects keep their key order (parse with nlohmann::ordered_json).
  static Value from_json(const nlohmann::ordered_json& j);

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_undefined() const { return type() == Type::kUndefined; }
  bool is_none() const { return type() == Type::kNone; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_float() const { return type() == Type::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is an int
  bool is_string() const { return type() == Type::kString; }
  bool is_list() const { return type() == Type::kList; }
  bool is_dict() const { return type() == Type::kDict; }
  bool is_callable() const { return type() == Type::kCallable; }

  bool as_bool() const { return std::get<bool>(v_); }
  // An int or bool (Python's int); anything else fails as Python does where it needs an int.
  std::int64_t as_int() const {
    if (is_int()) return std::get<std::int64_t>(v_);
    if (is_bool()) return as_bool() ? 1 : 0;
    not_an_integer();
  }
  double as_double() const { return is_float() ? std::get<double>(v_) : static_cast<double>(as_int()); }
  const std::string& as_string() const { return std::get<std::shared_ptr<const StringObject>>(v_)->text; }
  bool is_markup() const { return is_string() && std::get<std::shared_ptr<const StringObject>>(v_)->markup; }
  [[noreturn]] void not_an_integer() const;
  const std::vector<Value>& list() const { return std::get<std::shared_ptr<ListObject>>(v_)->items; }
  bool is_tuple() const { return std::get<std::shared_ptr<ListObject>>(v_)->is_tuple; }
  bool is_generator() const { return is_list() && std::get<std::shared_ptr<ListObject>>(v_)->is_generator; }
  DictObject& dict_object() const { return *std::get<std::shared_ptr<DictObject>>(v_); }
  const CallableObject& callable() const { return *std::get<std::shared_ptr<CallableObject>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }
  // ListObject / DictObject depth; 0 for the other types.
  int nesting() const;

  // Python's bool(x).
  bool truthy() const;
  // Python's str(x) (what {{ x }} prints): None, True, 1.0, [1, 'a'], {'k': None}; undefined is "".
  std::string str() const;
  // Python's repr(x).
  std::string repr() const;
  // Python type name for messages: 'str', 'int', 'dict', ...
  std::string type_name() const;
  // json.dumps(x, ...) with the options of JsonOptions, as transformers' tojson filter calls it.
  std::string to_json(const JsonOptions& options = {}) const;

  // Items to iterate: a list's items, a dict's keys, a string's characters; undefined is empty.
  // A generator's items not read yet, which are read now.
  std::vector<Value> iterate() const;
  // A generator's next item, read now (Python's next()); nullopt when none is left.
  std::optional<Value> next_item() const;
  // How many of a generator's items have been read, and (a loop that stopped early) marking
  // only the first `n` as read; both 0 / nothing for other values.
  std::size_t items_read() const;
  void set_items_read(std::size_t n) const;
  // A generator `derived` made from this one (a filter's result): this one's items are read
  // when derived's are (see ListObject::source).
  void feeds(const Value& derived) const;

 private:
  std::string repr_at(int depth) const;
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(std::monostate m) : v_(m) {}
  std::variant<Undefined, std::monostate, bool, std::int64_t, double, std::shared_ptr<const StringObject>,
               std::shared_ptr<ListObject>, std::shared_ptr<DictObject>, std::shared_ptr<CallableObject>>
      v_;
};

// Python ==, and Python's < for the types that order (numbers, strings, lists).
bool values_equal(const Value& a, const Value& b);
// Throws (a message without location) when the types do not order.
bool values_less(const Value& a, const Value& b);

// Python's repr(float): the shortest digits that round-trip, 1.0, 1e-05, 1e+16, inf, nan.
std::string python_float_repr(double d);

// Thrown by values and built-ins; the renderer adds the template name and line.
struct TemplateError {
  std::string message;
};
[[noreturn]] void fail(const std::string& message);
// Fails with the undefined value's hint ("'x' is undefined") when v is undefined.
void require_defined(const Value& v);

}  // namespace staticlm::jinja

namespace staticlm::jinja {
// A template error at a known place: a staticlm Error (kInvalidFile) "NAME:LINE: message".
[[noreturn]] void fail_at(const std::string& template_name, int line, const std::string& message);
}  // namespace staticlm::jinja
