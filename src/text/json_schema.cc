#include "text/json_schema.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>

#include "base/error.h"
#include "base/json_limits.h"
#include "text/json_matcher.h"
#include "text/uri_reference.h"

namespace staticlm {

namespace {

using nlohmann::json;

// The keywords that constrain a value: the ones enforced, and JSON Schema's others, which are
// refused by place (a schema is never half enforced). Any other keyword says nothing a value
// must satisfy (title, description, default, examples, $defs, OpenAPI's example, discriminator
// and nullable, editors' markdownDescription, x-...): ignored, as JSON Schema says validators
// ignore unknown keywords. "format" constrains for the formats json_format knows.
const std::set<std::string> kConstraining = {
    "type", "enum", "const", "properties", "required", "additionalProperties", "items", "prefixItems", "additionalItems",
    "minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties", "pattern", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "allOf", "anyOf", "oneOf", "$ref", "multipleOf", "uniqueItems", "propertyNames",
    "dependentRequired", "dependencies", "patternProperties",
    // Not enforced (refused):
    "not", "if", "then", "else", "contains", "minContains",
    "maxContains", "dependentSchemas", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$recursiveRef"};

bool annotation(const std::string& key) { return kConstraining.count(key) == 0; }

bool constrains(const nlohmann::json& s, std::initializer_list<std::string_view> besides = {});

// Whether schema `v` (an object or a boolean) allows less than every value.
bool constrains_value(const nlohmann::json& v) { return v.is_boolean() ? !v.get<bool>() : !v.is_object() || constrains(v); }

bool enforced_format(const std::string& name) {
  return json_format(name) != JsonFormat::kNone || format_pattern(name).expression != nullptr;
}

// Whether schema object `s` has a keyword that constrains the value (one of kConstraining, or a
// format json_format enforces) besides those in `besides`.
bool constrains(const nlohmann::json& s, std::initializer_list<std::string_view> besides) {
  for (const auto& [key, value] : s.items()) {
    if (std::find(besides.begin(), besides.end(), key) != besides.end()) continue;
    if (!annotation(key) || (key == "format" && value.is_string() && enforced_format(value.get<std::string>()))) {
      return true;
    }
  }
  return false;
}

// The most properties an object schema lists (PropertySet's size).
constexpr std::size_t kMaxListed = PropertySet::kMaxProperties;

// The greatest integer generation writes (JsonMatcher::kMaxIntegerDigits nines).
constexpr std::int64_t kIntegerLimit = 999999999999999999;
static_assert(JsonMatcher::kMaxIntegerDigits == 18, "kIntegerLimit");

// A property name as written between the quotes of a JSON string.
std::string escaped(const std::string& s) {
  const std::string d = json(s).dump();
  return d.substr(1, d.size() - 2);
}

struct Bound {
  double value;
  bool exclusive;
};

// A value in units of 10^-kDecimalPlaces as the text a matcher lets through ("-12.5" for
// -12500000), and the double a reader parses from it.
double scaled_value(std::int64_t v) {
  constexpr std::int64_t kUnit = JsonSchemaNode::kDecimalUnit;
  static_assert(JsonSchemaNode::kDecimalPlaces == 6, "the %06llu below");
  const std::uint64_t m = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  char text[48];
  std::snprintf(text, sizeof text, "%s%llu.%06llu", v < 0 ? "-" : "", static_cast<unsigned long long>(m / kUnit),
                static_cast<unsigned long long>(m % kUnit));
  return std::strtod(text, nullptr);
}

// The least (lower) or greatest (!lower) value in units of 10^-kDecimalPlaces, with at most
// kDecimalIntegerDigits integer digits, whose parsed double satisfies the bound. Found from an
// estimate by stepping while the parsed doubles say so (they are monotone in the value), so
// the bound holds for what a reader of the text sees, not for a rounded product. Past the
// representable range: one past its end (a bound nothing satisfies, or none at all).
std::int64_t scaled_bound(const Bound& b, bool lower) {
  constexpr std::int64_t kMax = JsonSchemaNode::kDecimalMax;
  const auto ok = [&](std::int64_t v) {
    const double x = scaled_value(v);
    return lower ? (b.exclusive ? x > b.value : x >= b.value) : (b.exclusive ? x < b.value : x <= b.value);
  };
  if (std::isinf(b.value)) return lower ? -kMax : kMax;
  const long double e = static_cast<long double>(b.value) * JsonSchemaNode::kDecimalUnit;
  if (e > static_cast<long double>(kMax)) return lower ? kMax + 1 : kMax;
  if (e < -static_cast<long double>(kMax)) return lower ? -kMax : -kMax - 1;
  std::int64_t v = static_cast<std::int64_t>(lower ? std::ceil(e) : std::floor(e));
  if (lower) {
    while (v > -kMax && ok(v - 1)) --v;
    while (v <= kMax && !ok(v)) ++v;
  } else {
    while (v < kMax && ok(v + 1)) ++v;
    while (v >= -kMax && !ok(v)) --v;
  }
  return v;
}

class Compiler {
  // A oneOf's branches and their numbers in the schema (those that allow no value left out).
  struct OneOf {
    std::string here;
    std::vector<int> branches;
    std::vector<std::size_t> numbers;
  };

 public:
  Compiler(const json& root, std::string what) : root_(root), what_(std::move(what)) {}

  JsonSchema run() {
    JsonSchema s;
    resources_.emplace("", &root_);
    index_resources(root_, "", "");
    s.root = compile(root_, "");
    for (const OneOf& o : one_of_) check_one_of(o);
    check_finite();
    s.nodes = std::move(nodes_);
    s.patterns = std::move(patterns_);
    return s;
  }

 private:
  [[noreturn]] void fail(const std::string& at, const std::string& m) const {
    invalid_argument(what_ + " at " + (at.empty() ? std::string("/") : at) + ": " + m);
  }

  // A node for `s`, reserved before its parts are compiled so that a part may refer back to
  // it (a tree's children); filled in by fill(). Until then its fields say nothing.
  int reserve(const json& s, const std::string& place) {
    const int index = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    filled_.push_back(0);
    places_.push_back(place);
    memo_[&s] = index;
    return index;
  }

  int fill(int index, JsonSchemaNode n) {
    nodes_[static_cast<std::size_t>(index)] = std::move(n);
    filled_[static_cast<std::size_t>(index)] = 1;
    return index;
  }

  bool pending(int index) const { return index >= 0 && !filled_[static_cast<std::size_t>(index)]; }

  // Whether `s` allows no value: false, or {"not": {}} / {"not": true} (zod-to-json-schema's
  // z.undefined()), with annotations at most.
  static bool never(const json& s) {
    if (s.is_boolean()) return !s.get<bool>();
    if (!s.is_object() || !s.contains("not")) return false;
    const json& x = s["not"];
    const bool anything = (x.is_boolean() && x.get<bool>()) || (x.is_object() && !constrains(x));
    return anything && !constrains(s, {"not"});
  }

  // The schema of a member or an item: one that allows no value there forbids that member or
  // item, no more.
  int child(const json& s, const std::string& at) { return never(s) ? kJsonNoNode : compile(s, at); }

  int compile(const json& s, const std::string& at) {
    if (never(s)) fail(at, "a schema that allows no value (false, or not: {}) is supported only where it forbids a property, an item or an anyOf / oneOf branch");
    if (s.is_boolean()) return kJsonAnyNode;
    if (!s.is_object()) fail(at, "expected a schema (an object or true), got " + s.dump());
    if (const auto it = memo_.find(&s); it != memo_.end()) return it->second;
    // The base URI references inside `s` are read against (its "$id", or its resource's).
    const std::string outer_base = base_now_;
    struct Restore {
      std::string& slot;
      const std::string& value;
      ~Restore() { slot = value; }
    } restore{base_now_, outer_base};
    base_now_ = base_of(&s);
    if (const auto it = distributed_.find(&s); it != distributed_.end()) return compile(*it->second, at);
    if (s.contains("$ref")) return reference(s, at);
    if (!constrains(s)) return kJsonAnyNode;
    if (s.contains("allOf")) return all_of(s, at);
    if (s.contains("anyOf") || s.contains("oneOf")) return alternatives(s, at);
    const int index = reserve(s, at);
    JsonSchemaNode n;
    Bound low{-HUGE_VAL, false}, high{HUGE_VAL, false};
    std::optional<std::vector<std::string>> names;  // propertyNames: the keys allowed (escaped)
    int names_pattern = -1;                         // propertyNames: the pattern keys match
    int key_pattern = -1, key_match = kJsonAnyNode;  // patternProperties
    std::vector<std::pair<std::string, std::vector<std::string>>> depends;  // dependentRequired: name -> names
    for (const auto& [key, v] : s.items()) {
      const std::string here = at + "/" + key;
      if (key == "format" && v.is_string()) n.format = json_format(v.get<std::string>());
      if (annotation(key)) continue;
      if (key == "type") {
        n.types = types(v, here);
      } else if (key == "enum" || key == "const") {
        if (key == "enum" && (!v.is_array() || v.empty())) fail(here, "expected a non-empty array");
        std::vector<std::string> values;
        if (key == "enum") {
          for (const json& x : v) values.push_back(x.dump());
        } else {
          values.push_back(v.dump());
        }
        std::sort(values.begin(), values.end());
        values.erase(std::unique(values.begin(), values.end()), values.end());
        if (s.contains("enum") && s.contains("const") && key == "enum") {
          // Both must hold: the const, if the enum lists it (the other key keeps it below).
        } else if (s.contains("enum") && s.contains("const")) {
          std::erase_if(values, [&](const std::string& x) {
            return std::none_of(s["enum"].begin(), s["enum"].end(), [&](const json& e) { return e.dump() == x; });
          });
          if (values.empty()) fail(here, "the const is not among the enum's values: no value is valid");
          n.enum_values = std::move(values);
        } else {
          n.enum_values = std::move(values);
        }
      } else if (key == "properties") {
        if (!v.is_object()) fail(here, "expected an object of schemas");
        if (v.size() > kMaxListed) fail(here, "more than " + std::to_string(kMaxListed) + " properties are not supported");
        for (const auto& [name, sub] : v.items()) n.properties.emplace_back(escaped(name), child(sub, here + "/" + name));
        std::sort(n.properties.begin(), n.properties.end());
      } else if (key == "required") {
        if (!v.is_array()) fail(here, "expected an array of property names");
      } else if (key == "additionalProperties") {
        n.additional = child(v, here);
      } else if (key == "propertyNames") {
        names = property_names(child(v, here), here, names_pattern);
      } else if (key == "patternProperties") {
        if (!v.is_object()) fail(here, "expected an object of patterns and schemas");
        if (v.size() > 1) fail(here, "more than one pattern is not supported (a key matching two would take both schemas)");
        for (const auto& [pattern, sub] : v.items()) {
          patterns_.push_back(JsonPattern::compile(pattern, what_ + " at " + here + "/" + pattern));
          key_pattern = static_cast<int>(patterns_.size()) - 1;
          key_match = child(sub, here + "/" + pattern);
        }
      } else if (key == "dependentRequired" || key == "dependencies") {
        if (!v.is_object()) fail(here, "expected an object of property names");
        for (const auto& [name, list] : v.items()) {
          if (!list.is_array()) {
            fail(here + "/" + name, key == "dependencies" ? "dependencies with a schema (Draft 7's schema dependencies) are not supported"
                                                          : "expected an array of property names");
          }
          std::vector<std::string> needed;
          for (const json& x : list) {
            if (!x.is_string()) fail(here + "/" + name, "expected property names, got " + x.dump());
            needed.push_back(x.get<std::string>());
          }
          depends.emplace_back(name, std::move(needed));
        }
      } else if (key == "items" && v.is_array()) {
        // Draft 7's tuple form: items [...] is 2020-12's prefixItems, additionalItems its items.
        for (std::size_t i = 0; i < v.size(); ++i) n.prefix_items.push_back(child(v[i], here + "/" + std::to_string(i)));
        if (s.contains("additionalItems")) n.items = child(s["additionalItems"], at + "/additionalItems");
      } else if (key == "additionalItems") {
        // With an items array (above); alone it constrains nothing (Draft 7 and 2020-12 alike).
      } else if (key == "items") {
        // An object given as prefixItems (below) stands for items where items allows anything.
        if (!(s.contains("prefixItems") && s["prefixItems"].is_object() && !constrains_value(v))) n.items = child(v, here);
      } else if (key == "prefixItems" && v.is_object()) {
        // Not JSON Schema (prefixItems is an array), but written so and read by llama.cpp as the
        // schema of every item: read so here too, unless items says something else.
        if (s.contains("items") && constrains_value(s["items"])) {
          fail(here, "expected an array of schemas (an object is read as the items' schema, as llama.cpp reads it, only "
                     "where items allows any item)");
        }
        n.items = child(v, here);
      } else if (key == "prefixItems") {
        if (!v.is_array()) fail(here, "expected an array of schemas");
        for (std::size_t i = 0; i < v.size(); ++i) n.prefix_items.push_back(child(v[i], here + "/" + std::to_string(i)));
      } else if (key == "multipleOf") {
        // Integers only: a fraction's multiples are not exact in the doubles validators divide
        // (0.07 / 0.01 is 7.000000000000001), so a value generated right could be refused.
        if (!v.is_number() || v.get<double>() <= 0) fail(here, "expected a number > 0");
        const double q = v.get<double>();
        if (!v.is_number_integer() && (q != std::floor(q) || q > 1e18)) {
          fail(here, "multipleOf is supported with integer values (the multiples of a fraction are not exact in the doubles "
                     "validators compare)");
        }
        n.multiple_of = v.is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(v.get<std::uint64_t>(), kIntegerLimit + 1))
                        : v.is_number_integer() ? std::min<std::int64_t>(v.get<std::int64_t>(), kIntegerLimit + 1)
                                                : static_cast<std::int64_t>(q);
      } else if (key == "uniqueItems") {
        if (!v.is_boolean()) fail(here, "expected true or false");
        n.unique_items = v.get<bool>();
      } else if (key == "minItems" || key == "maxItems" || key == "minLength" || key == "maxLength" ||
                 key == "minProperties" || key == "maxProperties") {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0) fail(here, "expected an integer >= 0");
        const std::int64_t x = std::min<std::int64_t>(v.get<std::int64_t>(), INT32_MAX);
        (key == "minItems"        ? n.min_items
         : key == "maxItems"      ? n.max_items
         : key == "minLength"     ? n.min_length
         : key == "maxLength"     ? n.max_length
         : key == "minProperties" ? n.min_properties
                                  : n.max_properties) = x;
      } else if (key == "pattern") {
        if (!v.is_string()) fail(here, "expected a regular expression (a string)");
        patterns_.push_back(JsonPattern::compile(v.get<std::string>(), what_ + " at " + here));
        n.pattern = static_cast<int>(patterns_.size()) - 1;
      } else if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" || key == "exclusiveMaximum") {
        // Draft 4 (OpenAPI 3.0): "exclusiveMinimum": true makes "minimum" exclusive.
        if ((key == "exclusiveMinimum" || key == "exclusiveMaximum") && v.is_boolean()) continue;
        if (!v.is_number()) fail(here, "expected a number");
        const char* flag = key == "minimum" ? "exclusiveMinimum" : key == "maximum" ? "exclusiveMaximum" : nullptr;
        const std::string bound = flag && s.contains(flag) && s[flag].is_boolean() && s[flag].get<bool>() ? flag : key;
        const double raw = v.get<double>();
        n.bounded = true;
        if (bound == "minimum") n.minimum = std::max(n.minimum, integer_bound(v, true));
        if (bound == "exclusiveMinimum") n.minimum = std::max(n.minimum, integer_bound(v, false) + 1);
        if (bound == "maximum") n.maximum = std::min(n.maximum, integer_bound(v, false));
        if (bound == "exclusiveMaximum") n.maximum = std::min(n.maximum, integer_bound(v, true) - 1);
        // The same bounds for numbers, kept as doubles (the tighter of two equal ones: exclusive).
        if (bound == "minimum" && raw > low.value) low = {raw, false};
        if (bound == "exclusiveMinimum" && raw >= low.value) low = {raw, true};
        if (bound == "maximum" && raw < high.value) high = {raw, false};
        if (bound == "exclusiveMaximum" && raw <= high.value) high = {raw, true};
      } else {
        fail(here, "'" + key + "' is not supported (it could not be enforced while generating)");
      }
    }
    if (key_pattern >= 0 || names_pattern >= 0) key_patterns(n, key_pattern, key_match, names_pattern, at);
    if (names) only_property_names(n, *names, s, at);
    if (s.contains("required")) {
      // A required name that "properties" does not list is still a key the object must have,
      // its value whatever additionalProperties allows: listed here with that schema.
      for (const json& r : s["required"]) {
        if (!r.is_string()) fail(at + "/required", "expected property names, got " + r.dump());
        const std::string name = escaped(r.get<std::string>());
        if (const int i = property_index(n, name); i >= 0) {
          if (n.properties[static_cast<std::size_t>(i)].second == kJsonNoNode) {
            fail(at + "/required", "'" + r.get<std::string>() + "' is required, but its schema is false: no object is valid");
          }
          continue;
        }
        if (other_key_schema(n, name) == kJsonNoNode) {
          fail(at + "/required", "'" + r.get<std::string>() + "' is required, but it is not among the properties and no "
                                 "other key of that name is allowed (additionalProperties, patternProperties, propertyNames): "
                                 "no object is valid");
        }
        list_other_key(n, name, at + "/required");
      }
    }
    // dependentRequired's names: listed as required ones are (where other keys are allowed).
    for (const auto& [trigger, needed] : depends) {
      for (const std::string& name : needed) {
        if (other_key_schema(n, escaped(name)) != kJsonNoNode && property_index(n, escaped(name)) < 0) list_other_key(n, escaped(name), at);
      }
      if (other_key_schema(n, escaped(trigger)) != kJsonNoNode && property_index(n, escaped(trigger)) < 0) {
        list_other_key(n, escaped(trigger), at);
      }
    }
    // Every name listed: the order the matcher narrows keys in, then the sets by index.
    std::sort(n.properties.begin(), n.properties.end());
    if (s.contains("required")) {
      for (const json& r : s["required"]) n.required.set(static_cast<std::size_t>(property_index(n, escaped(r.get<std::string>()))));
    }
    if (!depends.empty()) dependent_required(n, depends, at);
    if (s.contains("format") && s["format"].is_string()) format_as_pattern(n, s["format"].get<std::string>(), at);
    check_format(n, at);
    if (n.pattern >= 0) {
      JsonPattern& p = patterns_[static_cast<std::size_t>(n.pattern)];
      if (p.fewest_to_match(JsonPattern::start()) < 0) fail(at + "/pattern", "the pattern matches no string");
      if (n.enum_values.empty()) {
        // What a patterned string can hold: no \u escapes (the matcher takes none there), so no
        // control characters but \b \t \n \f \r, and UTF-8 has no surrogates.
        p.keep_only({{0x08, 0x0A}, {0x0C, 0x0D}, {0x20, 0xD7FF}, {0xE000, 0x10FFFF}});
        if (p.fewest_to_match(JsonPattern::start()) < 0) {
          fail(at + "/pattern", "every string the pattern matches has a control character a JSON string writes as a \\u "
                                "escape, and patterned strings take no \\u escapes");
        }
      }
      check_pattern_lengths(n, at);
    }
    if (n.max_items >= 0 && n.min_items > n.max_items) fail(at, "minItems is above maxItems");
    if (n.max_length >= 0 && n.min_length > n.max_length) fail(at, "minLength is above maxLength");
    if (n.unique_items && (n.types & kJsonArray)) check_unique_items(n, at);
    if (n.bounded && !(n.types & (kJsonInteger | kJsonNumber))) {
      fail(at, "minimum and maximum are enforced with \"type\": \"integer\" or \"number\"");
    }
    if (n.bounded && (n.types & kJsonNumber)) {
      n.decimal = true;
      n.min_scaled = scaled_bound(low, true);
      n.max_scaled = scaled_bound(high, false);
    }
    check_bounds(n, at, "the minimum and the maximum");
    check_property_counts(n, at);
    if (!n.enum_values.empty() && constrains(s, {"enum", "const"})) keep_valid_enum_values(n, index, at);
    return fill(index, std::move(n));
  }

  // The least (up) or greatest integer a bound's value allows, exact for integers written in
  // the schema (a double would round past 2^53), kept within one past the integers of at most
  // JsonMatcher::kMaxIntegerDigits digits generation writes (check_bounds then says so).
  static std::int64_t integer_bound(const json& v, bool up) {
    constexpr std::int64_t kPast = kIntegerLimit + 1;
    if (v.is_number_unsigned()) return static_cast<std::int64_t>(std::min<std::uint64_t>(v.get<std::uint64_t>(), kPast));
    if (v.is_number_integer()) return std::clamp<std::int64_t>(v.get<std::int64_t>(), -kPast, kPast);
    const double x = std::clamp(v.get<double>(), -1e18, 1e18);  // 1e18 == kPast
    return static_cast<std::int64_t>(up ? std::ceil(x) : std::floor(x));
  }

  // Refuses bounds no value generation writes lies between: numbers with at most
  // kDecimalIntegerDigits digits before the point and kDecimalPlaces after it, integers of at
  // most JsonMatcher::kMaxIntegerDigits digits.
  void check_bounds(const JsonSchemaNode& n, const std::string& at, const std::string& bounds) const {
    if (!n.bounded) return;
    if (n.decimal && (n.types & kJsonNumber) && n.multiple_of <= 0) {
      if (n.min_scaled > n.max_scaled) {
        fail(at, "no number of at most " + std::to_string(JsonSchemaNode::kDecimalIntegerDigits) + " digits before the point and " +
                     std::to_string(JsonSchemaNode::kDecimalPlaces) + " after it (what generation writes) lies between " + bounds);
      }
    } else if (integers_between(n) == 0) {
      fail(at, std::string(n.multiple_of > 0 ? "no multiple of " + std::to_string(n.multiple_of) : "no integer") + " of at most " +
                   std::to_string(JsonMatcher::kMaxIntegerDigits) + " digits (what generation writes) lies between " + bounds);
    }
  }

  // How many integers of at most 18 digits lie within the node's bounds and are multiples of its
  // multipleOf (capped at INT32_MAX).
  static std::int64_t integers_between(const JsonSchemaNode& n) {
    const std::int64_t lo = n.bounded ? std::max(n.minimum, -kIntegerLimit) : -kIntegerLimit;
    const std::int64_t hi = n.bounded ? std::min(n.maximum, kIntegerLimit) : kIntegerLimit;
    if (lo > hi) return 0;
    const std::int64_t q = n.multiple_of > 0 ? n.multiple_of : 1;
    // Multiples of q in [lo, hi]: floor(hi / q) - ceil(lo / q) + 1 (division rounds toward zero).
    const std::int64_t first = lo >= 0 ? (lo + q - 1) / q : lo / q, last = hi >= 0 ? hi / q : -((-hi + q - 1) / q);
    return std::clamp<std::int64_t>(last - first + 1, 0, INT32_MAX);
  }

  // Keeps the enum / const values that the node's other keywords allow: each value's compact
  // text is read by the matcher generation uses, on the node without its enum. (A part not
  // compiled yet, where the node refers back to itself, reads as any value.)
  void keep_valid_enum_values(JsonSchemaNode& n, int index, const std::string& at) {
    std::vector<std::string> values = std::move(n.enum_values);
    n.enum_values.clear();
    nodes_[static_cast<std::size_t>(index)] = n;
    JsonSchema s;
    s.nodes = std::move(nodes_);
    s.patterns = std::move(patterns_);
    s.root = index;
    std::erase_if(values, [&](const std::string& v) {
      JsonMatcher m(s);
      for (unsigned char c : v) {
        if (!m.feed(c)) return true;
      }
      return !m.complete();
    });
    nodes_ = std::move(s.nodes);
    patterns_ = std::move(s.patterns);
    if (values.empty()) fail(at, "no value of the enum / const satisfies the keywords beside it");
    n.enum_values = std::move(values);
  }

  unsigned types(const json& v, const std::string& at) const {
    static const std::map<std::string, unsigned> names = {{"null", kJsonNull},       {"boolean", kJsonBool},
                                                          {"integer", kJsonInteger}, {"number", kJsonNumber},
                                                          {"string", kJsonString},   {"array", kJsonArray},
                                                          {"object", kJsonObject}};
    const auto one = [&](const json& t) {
      const auto it = t.is_string() ? names.find(t.get<std::string>()) : names.end();
      if (it == names.end()) fail(at, "expected a JSON type name (null, boolean, integer, number, string, array, object), got " + t.dump());
      return it->second;
    };
    if (!v.is_array()) return one(v);
    unsigned bits = 0;
    for (const json& t : v) bits |= one(t);
    if (bits == 0) fail(at, "expected at least one type");
    return bits;
  }

  int reference(const json& s, const std::string& at) {
    bool alone = true;
    for (const auto& [key, value] : s.items()) alone = alone && (key == "$ref" || annotation(key));
    if (!alone) {
      // Keywords next to $ref constrain the value too (JSON Schema 2019-09 on): both must hold.
      json siblings = s;
      siblings.erase("$ref");
      const std::vector<std::pair<const json*, std::string>> parts = {
          {keep(json{{"$ref", s["$ref"]}}, &s), at}, {keep(std::move(siblings), &s), at}};
      return merge_all(s, parts, at);
    }
    const json& r = s["$ref"];
    if (!r.is_string()) fail(at + "/$ref", "expected a string");
    const std::string ref = r.get<std::string>();
    const json* target = pointed(ref, at + "/$ref", base_now_);
    if (++depth_ > 256) fail(at + "/$ref", "references nest deeper than 256");
    const auto place = where_.find(target);
    const int n = compile(*target, place != where_.end() ? place->second : ref.substr(1));
    --depth_;
    return n;
  }

  // The schema whose "$anchor" is `name` (Draft 7: whose "$id" is "#name"), anywhere in `s`.
  static const json* anchored(const json& s, const std::string& name) {
    if (s.is_object()) {
      const auto is = [&](const char* key, const std::string& want) {
        const auto it = s.find(key);
        return it != s.end() && it->is_string() && it->get<std::string>() == want;
      };
      if (is("$anchor", name) || is("$id", "#" + name)) return &s;
      for (const auto& [key, value] : s.items()) {
        if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;  // values, not schemas
        if (const json* found = anchored(value, name)) return found;
      }
    } else if (s.is_array()) {
      for (const json& x : s) {
        if (const json* found = anchored(x, name)) return found;
      }
    }
    return nullptr;
  }

  // Every schema's base URI (its "$id" read against its parent's, or the parent's), the
  // resources ("$id" without a fragment -> schema), the anchors ("URI#name": "$anchor", or
  // Draft 7's "$id": "#name") and where each schema is (a JSON pointer). Values (enum, const,
  // default, examples) are not schemas.
  void index_resources(const json& s, std::string base, const std::string& pointer) {
    if (s.is_object()) {
      if (const auto it = s.find("$id"); it != s.end() && it->is_string()) {
        const std::string id = it->get<std::string>();
        const std::string target = resolve_uri(base, id);
        if (id.empty() || id[0] != '#') {
          base = uri_without_fragment(target);
          resources_.emplace(base, &s);
        }
        const std::string fragment = uri_fragment(target);
        if (!fragment.empty() && fragment[0] != '/') anchors_.emplace(base + "#" + fragment, &s);
      }
      if (const auto it = s.find("$anchor"); it != s.end() && it->is_string()) anchors_.emplace(base + "#" + it->get<std::string>(), &s);
      base_.emplace(&s, base);
      where_.emplace(&s, pointer);
      for (const auto& [key, value] : s.items()) {
        if (key == "enum" || key == "const" || key == "default" || key == "examples") continue;
        index_resources(value, base, pointer + "/" + key);
      }
    } else if (s.is_array()) {
      for (std::size_t i = 0; i < s.size(); ++i) index_resources(s[i], base, pointer + "/" + std::to_string(i));
    }
  }

  // The base URI of `s`: indexed, or (a schema the compiler made) the one it was made in.
  std::string base_of(const json* s) const {
    const auto it = base_.find(s);
    return it != base_.end() ? it->second : base_now_;
  }

  // The schema a reference names, read against `base` (RFC 3986): a resource of this document
  // (its "$id"), then "#" alone, a JSON pointer ("#/$defs/a~1b": ~1 is '/', ~0 '~', %XX a URI's
  // escaped byte) from that resource, or an anchor ("#node": the schema whose "$anchor" is
  // "node"). Other documents are not fetched.
  const json* pointed(const std::string& ref, const std::string& at, const std::string& base) const {
    const std::string target = resolve_uri(base, ref);
    const std::string uri = uri_without_fragment(target);
    const auto resource = resources_.find(uri);
    if (resource == resources_.end()) {
      fail(at, "'" + ref + "': no schema in this document has the $id " + (uri.empty() ? std::string("''") : uri) +
                   " (other documents are not fetched; references within this one are \"#\", a JSON pointer such as "
                   "#/$defs/Name, #anchor, or a schema's $id)");
    }
    const std::string fragment = uri_fragment(target);
    if (!fragment.empty() && fragment[0] != '/') {
      if (const auto it = anchors_.find(uri + "#" + fragment); it != anchors_.end()) return it->second;
      if (const json* found = anchored(*resource->second, fragment)) return found;
      fail(at, "'" + ref + "': no schema here has \"$anchor\": \"" + fragment + "\"");
    }
    std::string path;  // the fragment, %XX decoded
    for (std::size_t i = 0; i < fragment.size(); ++i) {
      const auto hex = [&](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
      if (fragment[i] == '%' && i + 2 < fragment.size() && hex(fragment[i + 1]) && hex(fragment[i + 2])) {
        path += static_cast<char>(std::stoi(fragment.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        path += fragment[i];
      }
    }
    const json* node = resource->second;
    for (std::size_t start = 1, end = 0; end < path.size(); start = end + 1) {
      end = std::min(path.find('/', start), path.size());
      std::string token;
      for (std::size_t i = start; i < end; ++i) {
        if (path[i] == '~' && i + 1 < end && (path[i + 1] == '0' || path[i + 1] == '1')) {
          token += path[++i] == '0' ? '~' : '/';
        } else if (path[i] == '~') {
          fail(at, "'" + ref + "': '~' in a JSON pointer is followed by 0 or 1");
        } else {
          token += path[i];
        }
      }
      if (node->is_object() && node->contains(token)) {
        node = &(*node)[token];
      } else if (node->is_array() && !token.empty() && token.size() < 10 &&
                 std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                 std::stoul(token) < node->size()) {
        node = &(*node)[std::stoul(token)];
      } else {
        fail(at, "'" + ref + "' points at nothing in this schema ('" + token + "' is not there)");
      }
    }
    return node;
  }

  // uniqueItems, where the matcher can hold it without a dead end: items whose values have one
  // spelling each (so two items are equal exactly when their texts are: null, booleans,
  // integers, strings without maxLength / pattern / format, whose every prefix has endings
  // enough, or an enum of surely different values) and no prefixItems. Sets the number of
  // distinct values (minItems must not exceed it).
  void check_unique_items(JsonSchemaNode& n, const std::string& at) const {
    const std::string why = "uniqueItems is supported for items of type null, boolean, integer or string (without "
                            "maxLength, pattern or format) or an enum: ";
    if (!n.prefix_items.empty()) fail(at, why + "not with prefixItems");
    if (n.items == kJsonNoNode) return;
    if (n.items == kJsonAnyNode) fail(at, why + "these items may be any value (1 and 1.0 are one number)");
    if (pending(n.items)) fail(at, why + "these items refer back to the array");
    const JsonSchemaNode& item = nodes_[static_cast<std::size_t>(n.items)];
    if (!item.any_of.empty()) fail(at, why + "not an anyOf whose branches overlap");
    std::int64_t domain = 0;
    if (!item.enum_values.empty()) {
      for (std::size_t j = 1; j < item.enum_values.size(); ++j) {
        for (std::size_t i = 0; i < j; ++i) {
          if (!values_differ(item.enum_values[i], item.enum_values[j])) fail(at, why + "this enum holds values that could be equal");
        }
      }
      domain = static_cast<std::int64_t>(item.enum_values.size());
    } else {
      if (item.types & (kJsonNumber | kJsonArray | kJsonObject)) fail(at, why + "not numbers, arrays or objects (one value, many spellings)");
      if ((item.types & kJsonString) && (item.max_length >= 0 || item.pattern >= 0 || item.format != JsonFormat::kNone)) {
        fail(at, why + "strings with maxLength, pattern or format could begin an item whose every ending is taken");
      }
      const bool unbounded = (item.types & kJsonString) || ((item.types & kJsonInteger) && !item.bounded);
      if (item.types & kJsonNull) domain += 1;
      if (item.types & kJsonBool) domain += 2;
      if ((item.types & kJsonInteger) && item.bounded) domain += integers_between(item);
      if (unbounded) domain = -1;
    }
    n.unique_domain = domain;
    if (domain >= 0 && n.min_items > domain) {
      fail(at, "minItems " + std::to_string(n.min_items) + " with uniqueItems, but the items have only " + std::to_string(domain) +
                   " distinct values");
    }
  }

  // The keys propertyNames' compiled schema `node` allows, escaped as listed properties are:
  // nullopt for any key; a list (maybe empty) for an enum or const of names, or a type without
  // "string" (no key). Other string constraints on keys are refused by place.
  std::optional<std::vector<std::string>> property_names(int node, const std::string& at, int& pattern) const {
    if (node == kJsonAnyNode) return std::nullopt;
    if (node == kJsonNoNode) return std::vector<std::string>{};
    if (pending(node)) fail(at, "a propertyNames schema that refers back to a schema it is part of is not supported");
    const JsonSchemaNode& k = nodes_[static_cast<std::size_t>(node)];
    if (!(k.types & kJsonString)) return std::vector<std::string>{};
    if (!k.enum_values.empty()) {
      // The enum holds only the values the keywords beside it allow (keep_valid_enum_values).
      std::vector<std::string> out;
      for (const std::string& v : k.enum_values) {
        if (const json x = json::parse(v); x.is_string()) out.push_back(escaped(x.get<std::string>()));
      }
      return out;
    }
    if (!k.any_of.empty() || k.min_length > 0 || k.max_length >= 0 || k.format != JsonFormat::kNone) {
      fail(at, "propertyNames is supported as an enum or const of names, a pattern, or a type; lengths, formats and "
               "anyOf on keys are not");
    }
    pattern = k.pattern;
    return std::nullopt;
  }

  // propertyNames as a list of names: listed properties outside it are forbidden (a required
  // one: refused), the names not listed are listed with additionalProperties' schema, and no
  // other key is allowed.
  // The text of a name as listed (escaped, as written inside a JSON string).
  static std::string unescaped(const std::string& name) { return json::parse("\"" + name + "\"").get<std::string>(); }

  // The schema of key `name` (escaped) where the properties do not list it: patternProperties'
  // (or propertyNames') where its pattern matches, else additionalProperties'.
  int other_key_schema(const JsonSchemaNode& n, const std::string& name) const {
    if (n.key_pattern >= 0 && patterns_[static_cast<std::size_t>(n.key_pattern)].matches(unescaped(name))) return n.key_match;
    return n.additional;
  }

  // patternProperties (`pattern` and its schema `match`) or a propertyNames pattern (`names`),
  // with the properties listed so far.
  void key_patterns(JsonSchemaNode& n, int pattern, int match, int names, const std::string& at) {
    if (pattern >= 0 && names >= 0) fail(at + "/propertyNames", "a propertyNames pattern next to patternProperties is not supported");
    const std::string where = at + (pattern >= 0 ? "/patternProperties" : "/propertyNames");
    JsonPattern& p = patterns_[static_cast<std::size_t>(pattern >= 0 ? pattern : names)];
    // Keys are written with \u escapes only for control characters, and a key with one cannot
    // match (as patterned strings take none): the pattern keeps the other characters.
    p.keep_only({{0x08, 0x0A}, {0x0C, 0x0D}, {0x20, 0xD7FF}, {0xE000, 0x10FFFF}});
    if (pattern >= 0) {
      // A listed property the pattern matches takes both schemas.
      for (auto& [name, schema] : n.properties) {
        if (!p.matches(unescaped(name)) || match == kJsonAnyNode || schema == match) continue;
        if (match == kJsonNoNode || schema == kJsonAnyNode) {
          schema = match;
        } else {
          fail(where, "property " + name + " is listed and matches the pattern: two schemas that must both hold are not supported");
        }
      }
      if (match == kJsonNoNode && n.additional != kJsonNoNode) {
        fail(where, "a pattern whose schema is false (keys that must not match it) beside other keys allowed is not supported");
      }
      n.key_pattern = match == kJsonNoNode ? -1 : pattern;
      n.key_match = match;
    } else {
      // Every key matches: listed properties that do not are never given.
      for (auto& [name, schema] : n.properties) {
        if (!p.matches(unescaped(name))) schema = kJsonNoNode;
      }
      n.key_pattern = n.additional == kJsonNoNode ? -1 : names;
      n.key_match = n.additional;
      n.additional = kJsonNoNode;
    }
    if (n.key_pattern < 0 || n.additional != kJsonNoNode) return;
    // Other keys must match. A key begun must have endings the object has not given yet: from
    // every place in the pattern a match can go on without end (a pattern with finitely many
    // names, or a branch with few, could run out and leave a key no way to close).
    if (p.fewest_to_match(JsonPattern::start()) < 0) fail(where, "the pattern matches no key");
    for (std::int64_t q = 0; q < p.positions(); ++q) {
      JsonPattern::State one{};
      one[static_cast<std::size_t>(q / 64)] = std::uint64_t{1} << (q % 64);
      if (p.fewest_to_match(one) >= 0 && !p.can_match(one, p.positions() + 1, INT64_MAX)) {
        fail(where, "a pattern with finitely many keys from some place on (a finite set of names, or an end fixed as in "
                    "'_id$'), where no other keys are allowed, is not supported: the keys could run out with one begun; "
                    "list those keys in properties, or allow other keys");
      }
    }
  }

  void only_property_names(JsonSchemaNode& n, const std::vector<std::string>& names, const json& s, const std::string& at) {
    const auto allowed = [&](const std::string& name) { return std::find(names.begin(), names.end(), name) != names.end(); };
    if (s.contains("required") && s["required"].is_array()) {
      for (const json& r : s["required"]) {
        if (r.is_string() && !allowed(escaped(r.get<std::string>()))) {
          fail(at + "/required", "'" + r.get<std::string>() + "' is required, but propertyNames does not allow it: no object is valid");
        }
      }
    }
    for (auto& p : n.properties) {
      if (!allowed(p.first)) p.second = kJsonNoNode;
    }
    for (const std::string& name : names) {
      if (n.additional != kJsonNoNode && property_index(n, name) < 0) list_other_key(n, name, at + "/propertyNames");
    }
    n.additional = kJsonNoNode;
  }

  // The index of the listed property spelled `name` (escaped as properties are); -1: not listed.
  static int property_index(const JsonSchemaNode& n, const std::string& name) {
    for (std::size_t i = 0; i < n.properties.size(); ++i) {
      if (n.properties[i].first == name) return static_cast<int>(i);
    }
    return -1;
  }

  // Lists `name` (escaped), a key the object may have that properties does not list, with
  // additionalProperties' schema. The caller sorts the properties once all are listed.
  void list_other_key(JsonSchemaNode& n, const std::string& name, const std::string& at) {
    if (n.properties.size() >= kMaxListed) fail(at, "more than " + std::to_string(kMaxListed) + " properties are not supported");
    n.properties.emplace_back(name, other_key_schema(n, name));
  }

  // dependentRequired's sets, its names listed already (compile()): a property is forbidden when
  // a property it requires cannot be given.
  void dependent_required(JsonSchemaNode& n, const std::vector<std::pair<std::string, std::vector<std::string>>>& depends,
                          const std::string& at) {
    const auto index = [&](const std::string& name) { return property_index(n, escaped(name)); };
    n.dependent_required.assign(n.properties.size(), PropertySet());
    PropertySet forbidden;
    for (std::size_t i = 0; i < n.properties.size(); ++i) {
      if (n.properties[i].second == kJsonNoNode) forbidden.set(i);
    }
    for (const auto& [trigger, needed] : depends) {
      const int t = index(trigger);
      if (t < 0) continue;  // a key the object never has
      for (const std::string& name : needed) {
        const int d = index(name);
        if (d < 0) forbidden.set(static_cast<std::size_t>(t));  // needs a key the object cannot have
        else n.dependent_required[static_cast<std::size_t>(t)].set(static_cast<std::size_t>(d));
      }
    }
    for (bool grew = true; grew;) {  // a property that needs a forbidden one is forbidden too
      grew = false;
      for (std::size_t i = 0; i < n.properties.size(); ++i) {
        if (!forbidden.test(i) && n.dependent_required[i].intersects(forbidden)) forbidden.set(i), grew = true;
      }
    }
    for (std::size_t i = 0; i < n.properties.size(); ++i) {
      if (!forbidden.test(i)) continue;
      n.properties[i].second = kJsonNoNode;
      if (n.required.test(i)) {
        fail(at + "/required", "'" + n.properties[i].first + "' is required, but a property it requires (dependentRequired) cannot be given: no object is valid");
      }
    }
  }

  // Refuses objects no value can be: minProperties above maxProperties, more required
  // properties than maxProperties, or fewer properties than minProperties where no other key is
  // allowed.
  void check_property_counts(const JsonSchemaNode& n, const std::string& at) {
    if (n.max_properties >= 0 && n.min_properties > n.max_properties) fail(at, "minProperties is above maxProperties");
    if (const auto need = static_cast<std::int64_t>(n.must_give(PropertySet()).count()); n.max_properties >= 0 && need > n.max_properties) {
      fail(at, std::to_string(need) + " required properties and maxProperties " + std::to_string(n.max_properties));
    }
    // Properties whose schema is false are never given.
    const auto can_have = std::count_if(n.properties.begin(), n.properties.end(), [](const auto& p) { return p.second != kJsonNoNode; });
    if (n.additional == kJsonNoNode && n.key_pattern < 0 && can_have < n.min_properties) {
      fail(at, "minProperties " + std::to_string(n.min_properties) + " with " + std::to_string(can_have) +
                   " properties that may be given and no other keys allowed");
    }
  }

  // Refuses a pattern that matches no string of a length minLength / maxLength allow. With both
  // bounds, the lengths a match can have are measured up to maxLength, so the matcher never
  // begins a string that only lengths outside them would finish.
  void check_pattern_lengths(const JsonSchemaNode& n, const std::string& at) {
    JsonPattern& p = patterns_[static_cast<std::size_t>(n.pattern)];
    if (n.min_length > 0 && n.max_length >= 0) {
      // Bounded work for a hostile schema (position x length steps over the whole schema); past
      // it, the fewest and the most decide, as they do past a pattern's measured cap.
      const std::int64_t positions = p.positions(), cap = std::min(n.max_length, length_budget_ / positions);
      if (cap > 0) {
        p.measure_lengths(cap);
        length_budget_ -= cap * positions;
      }
    }
    if (!p.can_match(JsonPattern::start(), n.min_length, n.max_length >= 0 ? n.max_length : INT64_MAX)) {
      fail(at, "no string between minLength and maxLength matches the pattern");
    }
  }

  // allOf: the branches (and the keywords next to allOf, as one more) compiled, then one node
  // that holds them all: types, required properties and bounds intersected, properties
  // gathered. Refused where one node cannot say it: a property, items, a pattern, a format or
  // number bounds given by two branches, additionalProperties or enum next to other branches.
  int all_of(const json& s, const std::string& at) {
    const std::string here = at + "/allOf";
    const json& v = s["allOf"];
    if (!v.is_array() || v.empty()) fail(here, "expected a non-empty array of schemas");
    std::vector<std::pair<const json*, std::string>> parts;
    for (std::size_t i = 0; i < v.size(); ++i) parts.emplace_back(&v[i], here + "/" + std::to_string(i));
    json siblings = s;
    siblings.erase("allOf");
    parts.emplace_back(keep(std::move(siblings), &s), at);
    return merge_all(s, parts, here);
  }

  // `choice` (an anyOf / oneOf, directly or through $refs alone) with `others` holding in each
  // of its branches: {"anyOf": [{"allOf": [others..., choice's other keywords, branch]}, ...]}
  // (oneOf stays oneOf: branches no value matches two of still exclude each other). Branches
  // whose types meet none of the others' are left out; null when none is left, or when `choice`
  // is not one.
  const json* distributed(const json& choice, const std::vector<json>& others, const std::string& at) {
    const json* a = through_references(&choice, at);
    if (a == nullptr || !a->is_object()) return nullptr;
    const char* key = a->contains("anyOf") ? "anyOf" : a->contains("oneOf") ? "oneOf" : nullptr;
    if (key == nullptr || !(*a)[key].is_array()) return nullptr;
    json rest = json::object();
    for (const auto& [k, value] : a->items()) {
      if (k != key && (!annotation(k) || k == "format")) rest[k] = value;
    }
    json branches = json::array();
    for (const json& b : (*a)[key]) {
      // Each distribution copies the parts beside it into every branch, and a copy may hold
      // another anyOf: allOf of k anyOfs of n branches would make n^k. Bounded.
      if (++distributed_branches_ > kMaxDistributedBranches) {
        fail(at, "distributing anyOf / oneOf branches over the schemas beside them makes more than " +
                     std::to_string(kMaxDistributedBranches) + " branches");
      }
      json all(others);
      if (!rest.empty()) all.push_back(rest);
      all.push_back(b);
      unsigned types = kJsonAnyType;
      for (const json& part : all) types &= json_types(part, at);
      if ((types & kJsonAnyType) == 0) continue;
      branches.push_back(json{{"allOf", std::move(all)}});
    }
    if (branches.empty()) return nullptr;
    return keep(json{{key, std::move(branches)}});
  }

  // The schema `s` is once the "$ref"s that stand alone in it are followed (null past 256).
  const json* through_references(const json* s, const std::string& at) const {
    for (int hops = 0; s->is_object() && s->contains("$ref") && !constrains(*s, {"$ref"}); ++hops) {
      if (hops > 256 || !(*s)["$ref"].is_string()) return nullptr;
      s = pointed((*s)["$ref"].get<std::string>(), at + "/$ref", base_of(s));
    }
    return s;
  }

  // The types `s` allows by its "type" keyword (through $refs alone; integer within number);
  // every type where it has none.
  unsigned json_types(const json& s, const std::string& at) {
    const json* a = through_references(&s, at);
    if (a == nullptr) return kJsonAnyType;
    if (a->is_boolean()) return a->get<bool>() ? static_cast<unsigned>(kJsonAnyType) : 0u;
    if (!a->is_object()) return kJsonAnyType;
    unsigned t = a->contains("type") ? types((*a)["type"], at + "/type") : kJsonAnyType;
    if (t & kJsonNumber) t |= kJsonInteger;
    // An enum's or a const's values have their own types.
    const auto of = [](const json& v) -> unsigned {
      if (v.is_null()) return kJsonNull;
      if (v.is_boolean()) return kJsonBool;
      if (v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) {
        return kJsonInteger | kJsonNumber;
      }
      if (v.is_number()) return kJsonNumber;
      if (v.is_string()) return kJsonString;
      return v.is_array() ? kJsonArray : kJsonObject;
    };
    if (a->contains("const")) t &= of((*a)["const"]);
    if (a->contains("enum") && (*a)["enum"].is_array()) {
      unsigned values = 0;
      for (const json& v : (*a)["enum"]) values |= of(v);
      t &= values;
    }
    return t;
  }

  // A schema the compiler made, kept as long as the compiler (its node may be memoized by address).
  const json* keep(json made, const json* made_from = nullptr) {
    made_.push_back(std::make_unique<json>(std::move(made)));
    // Read against the base URI of the schema it was made from (whose "$id" it may copy).
    if (made_from != nullptr) base_.emplace(made_.back().get(), base_of(made_from));
    return made_.back().get();
  }

  // The parts of `s` compiled and merged into one node (see all_of); `here` names the whole.
  int merge_all(const json& s, const std::vector<std::pair<const json*, std::string>>& parts, const std::string& here) {
    const int index = reserve(s, here);
    std::vector<std::pair<int, std::string>> branches;
    std::vector<const json*> sources;  // each branch's schema
    for (const auto& [part, where] : parts) {
      const int b = compile(*part, where);
      if (b == kJsonAnyNode) continue;
      branches.emplace_back(b, where);
      sources.push_back(part);
    }
    if (branches.size() == 1 && pending(branches[0].first)) {
      // One part, a schema still being compiled (a model's field that refers back to the model
      // through pydantic v1's {"allOf": [{"$ref": ...}], "description": ...}): followed as that
      // schema, as an anyOf of one branch, not copied before it is filled in.
      JsonSchemaNode alias;
      alias.any_of = {branches[0].first};
      return fill(index, std::move(alias));
    }
    for (const auto& [b, where] : branches) {
      if (pending(b)) fail(where, "a part that refers back to a schema it is part of, next to other parts, is not supported");
    }
    // An anyOf / oneOf whose branches overlap is a list of nodes, not one node to intersect: the
    // other parts are distributed over its branches instead (A and (B or C) = (A and B) or (A
    // and C)), and this node follows that.
    for (std::size_t i = 0; branches.size() > 1 && i < branches.size(); ++i) {
      if (nodes_[static_cast<std::size_t>(branches[i].first)].any_of.empty()) continue;
      std::vector<json> others;
      for (std::size_t j = 0; j < sources.size(); ++j) {
        if (j != i) others.push_back(*sources[j]);
      }
      if (const json* d = distributed(*sources[i], others, branches[i].second)) {
        JsonSchemaNode alias;
        alias.any_of = {compile(*d, here)};
        return fill(index, std::move(alias));
      }
    }
    JsonSchemaNode m;
    int closed = -1;  // the part with an additionalProperties schema, if any
    // Enum / const values every part that has them lists; kept below where the rest allows them.
    std::optional<std::vector<std::string>> values;
    for (std::size_t i = 0; i < branches.size(); ++i) {
      const JsonSchemaNode n = nodes_[static_cast<std::size_t>(branches[i].first)];
      const std::string& where = branches[i].second;
      const auto once = [&](bool here_set, bool before, const char* what) {
        if (here_set && before) fail(where, std::string(what) + " given by two schemas that must both hold (allOf, or $ref and its neighbours) is not supported");
      };
      if (branches.size() > 1) {
        if (!n.enum_values.empty()) {
          std::vector<std::string> both;
          std::set_intersection(n.enum_values.begin(), n.enum_values.end(), values ? values->begin() : n.enum_values.begin(),
                                values ? values->end() : n.enum_values.end(), std::back_inserter(both));
          if (both.empty()) fail(where, "no value of this enum / const is among the other parts' enum / const values");
          values = std::move(both);
        }
        if (n.additional != kJsonAnyNode) {
          // Other keys' schema: exact for the whole while every other part's properties are this
          // part's too (checked below), e.g. {"required": [...]} beside a closed model.
          if (closed >= 0) fail(where, "additionalProperties next to other schemas that must hold too is not supported");
          closed = static_cast<int>(i);
        }
        if (n.unique_items) fail(where, "uniqueItems next to other schemas that must hold too is not supported");
        if (!n.dependent_required.empty()) fail(where, "dependentRequired next to other schemas that must hold too is not supported");
        if (n.key_pattern >= 0) fail(where, "patternProperties or a propertyNames pattern next to other schemas that must hold too is not supported");
        // An anyOf / oneOf whose branches overlap is a list of nodes, not one node to intersect.
        if (!n.any_of.empty()) fail(where, "anyOf / oneOf whose branches overlap next to other schemas that must hold too is not supported");
      } else {
        m = n;
        break;
      }
      m.types &= n.types;
      for (const auto& p : n.properties) {
        const auto it = std::find_if(m.properties.begin(), m.properties.end(), [&](const auto& q) { return q.first == p.first; });
        if (it == m.properties.end()) {
          m.properties.push_back(p);
        } else if (it->second != p.second && p.second != kJsonAnyNode) {
          // Any value and a schema: the schema (a part that only requires the property lists it
          // with any value).
          if (it->second != kJsonAnyNode) fail(where, "property " + p.first + " given by two schemas that must both hold (allOf, or $ref and its neighbours) is not supported");
          it->second = p.second;
        }
      }
      m.min_properties = std::max(m.min_properties, n.min_properties);
      if (n.max_properties >= 0) m.max_properties = m.max_properties < 0 ? n.max_properties : std::min(m.max_properties, n.max_properties);
      once(!n.prefix_items.empty() || n.items != kJsonAnyNode, !m.prefix_items.empty() || m.items != kJsonAnyNode, "items");
      if (!n.prefix_items.empty() || n.items != kJsonAnyNode) m.prefix_items = n.prefix_items, m.items = n.items;
      m.min_items = std::max(m.min_items, n.min_items);
      if (n.max_items >= 0) m.max_items = m.max_items < 0 ? n.max_items : std::min(m.max_items, n.max_items);
      if (n.bounded && !m.bounded) {
        m.bounded = true, m.decimal = n.decimal, m.minimum = n.minimum, m.maximum = n.maximum;
        m.min_scaled = n.min_scaled, m.max_scaled = n.max_scaled;
      } else if (n.bounded) {  // both must hold: the tighter of each bound
        m.minimum = std::max(m.minimum, n.minimum), m.maximum = std::min(m.maximum, n.maximum);
        if (m.decimal && n.decimal) {
          m.min_scaled = std::max(m.min_scaled, n.min_scaled), m.max_scaled = std::min(m.max_scaled, n.max_scaled);
        } else if (n.decimal) {
          m.decimal = true, m.min_scaled = n.min_scaled, m.max_scaled = n.max_scaled;
        }
      }
      m.min_length = std::max(m.min_length, n.min_length);
      if (n.max_length >= 0) m.max_length = m.max_length < 0 ? n.max_length : std::min(m.max_length, n.max_length);
      once(n.multiple_of > 0, m.multiple_of > 0, "multipleOf");
      if (n.multiple_of > 0) m.multiple_of = n.multiple_of;
      once(n.format != JsonFormat::kNone, m.format != JsonFormat::kNone, "format");
      if (n.format != JsonFormat::kNone) m.format = n.format;
      once(n.pattern >= 0, m.pattern >= 0, "pattern");
      if (n.pattern >= 0) m.pattern = n.pattern;
    }
    if (branches.size() > 1 && closed >= 0) {
      const JsonSchemaNode& c = nodes_[static_cast<std::size_t>(branches[static_cast<std::size_t>(closed)].first)];
      for (const auto& [b, where] : branches) {
        for (const auto& p : nodes_[static_cast<std::size_t>(b)].properties) {
          if (property_index(c, p.first) < 0) {
            fail(branches[static_cast<std::size_t>(closed)].second, "additionalProperties next to another schema that must hold too and lists property " +
                                                                       p.first + ", which this one does not, is not supported");
          }
        }
      }
      m.additional = c.additional;
    }
    if (branches.size() > 1) {
      if (m.types == 0) fail(here, "no value has a type every part allows");
      check_bounds(m, here, "the parts' minimum and maximum");
      check_format(m, here);
      if (m.properties.size() > kMaxListed) fail(here, "more than " + std::to_string(kMaxListed) + " properties are not supported");
      std::sort(m.properties.begin(), m.properties.end());
      // Required: by name, from every branch, against the gathered properties.
      for (const auto& [b, where] : branches) {
        const JsonSchemaNode& n = nodes_[static_cast<std::size_t>(b)];
        for (std::size_t i = 0; i < n.properties.size(); ++i) {
          if (!n.required.test(i)) continue;
          const auto it = std::find_if(m.properties.begin(), m.properties.end(), [&](const auto& q) { return q.first == n.properties[i].first; });
          m.required.set(static_cast<std::size_t>(it - m.properties.begin()));
        }
      }
      if (m.max_items >= 0 && m.min_items > m.max_items) fail(here, "minItems is above maxItems");
      if (m.max_length >= 0 && m.min_length > m.max_length) fail(here, "minLength is above maxLength");
      if (m.pattern >= 0) check_pattern_lengths(m, here);  // one part's pattern, another's lengths
      check_property_counts(m, here);
      if (m.bounded && !(m.types & (kJsonInteger | kJsonNumber))) fail(here, "minimum and maximum are enforced with \"type\": \"integer\" or \"number\"");
      if (values) {
        m.enum_values = std::move(*values);
        keep_valid_enum_values(m, index, here);
      }
    }
    if (branches.empty()) m = JsonSchemaNode();
    return fill(index, std::move(m));
  }

  // Whether alternatives() can merge the branches into one node: their types do not overlap
  // (integer and number do, as do two bounded number branches), enums mix only with null and
  // boolean branches, and no branch is itself followed side by side.
  bool first_byte_decides(const std::vector<int>& branches) const {
    const unsigned numbers = kJsonInteger | kJsonNumber;
    unsigned seen = 0;
    bool has_enum = false, bounded = false, numbered = false, other = false;
    for (int b : branches) {
      const JsonSchemaNode& n = nodes_[static_cast<std::size_t>(b)];
      if (!n.any_of.empty()) return false;
      if (!n.enum_values.empty()) {
        has_enum = true;
        continue;
      }
      other |= (n.types & ~(kJsonNull | kJsonBool)) != 0;
      if ((seen & n.types & ~numbers) != 0) return false;
      if ((n.types & numbers) && (numbered && (bounded || n.bounded || n.multiple_of > 0))) return false;
      if (n.types & numbers) bounded |= n.bounded || n.multiple_of > 0, numbered = true;
      seen |= n.types;
    }
    return !(has_enum && other);
  }

  // Every node must have a finite value: the matcher may begin any of them (an optional
  // property too) and would find no way to end one that has none ({"type": "array",
  // "minItems": 1, "items": {"$ref": "#"}}). The nodes that have one, as a least fixed point.
  void check_finite() const {
    std::vector<char> finite(nodes_.size(), 0);
    const auto has = [&](int i) { return i == kJsonAnyNode || (i >= 0 && finite[static_cast<std::size_t>(i)]); };
    const unsigned scalars = kJsonNull | kJsonBool | kJsonInteger | kJsonNumber | kJsonString;
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (finite[i]) continue;
        const JsonSchemaNode& n = nodes_[i];
        bool f = !n.enum_values.empty() || (n.any_of.empty() && (n.types & scalars) != 0);
        if (!n.any_of.empty()) f = std::any_of(n.any_of.begin(), n.any_of.end(), has);
        if (!f && n.any_of.empty() && (n.types & kJsonArray)) {
          bool items = true;  // the first minItems items (past prefixItems all are `items`)
          const auto first = static_cast<std::size_t>(std::min<std::int64_t>(n.min_items, static_cast<std::int64_t>(n.prefix_items.size()) + 1));
          for (std::size_t k = 0; k < first; ++k) items = items && has(k < n.prefix_items.size() ? n.prefix_items[k] : n.items);
          f = items;
        }
        if (!f && n.any_of.empty() && (n.types & kJsonObject)) {
          bool required = true;
          for (std::size_t k = 0; k < n.properties.size(); ++k) {
            if (n.required.test(k)) required = required && has(n.properties[k].second);
          }
          f = required;
        }
        if (f) finite[i] = 1, changed = true;
      }
    }
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (!finite[i]) {
        fail(places_[i], "no finite value satisfies this schema (a required property or item needs a value of the "
                         "schema it is part of, or of one that has none)");
      }
    }
  }

  // The formats enforced as patterns (format_pattern) become the node's pattern, and their
  // longest value its maxLength where that is tighter.
  void format_as_pattern(JsonSchemaNode& n, const std::string& name, const std::string& at) {
    const FormatPattern f = format_pattern(name);
    if (f.expression == nullptr) return;
    if (n.pattern >= 0) {
      fail(at, "a pattern next to \"format\": \"" + name + "\" is not supported: the format is enforced as a pattern "
               "of its own, and two patterns on one string are not; write the format into the pattern");
    }
    patterns_.push_back(JsonPattern::compile(f.expression, what_ + " at " + at + "/format"));
    n.pattern = static_cast<int>(patterns_.size()) - 1;
    if (f.most >= 0 && (n.max_length < 0 || n.max_length > f.most)) n.max_length = f.most;
  }

  // What may stand next to a format the matcher enforces (an enum's values are written whole, so
  // there is nothing to check): minLength / maxLength leaving it every length it can take, and
  // no pattern. The matcher checks each character by character and could otherwise begin a
  // value it cannot finish.
  void check_format(const JsonSchemaNode& n, const std::string& at) const {
    if (n.format == JsonFormat::kNone || !n.enum_values.empty()) return;
    if (n.pattern >= 0) {
      fail(at, "a pattern next to a format the matcher enforces (date, time, date-time, uuid) is not supported: "
               "generation could begin a string that the two together cannot finish; write the format into the pattern");
    }
    if (!(n.types & kJsonString)) return;
    const FormatLengths f = format_lengths(n.format);
    if (n.min_length > f.fewest || (n.max_length >= 0 && n.max_length < f.most)) {
      fail(at, "minLength / maxLength that leave out some lengths of the format (" + std::to_string(f.fewest) +
                   (f.most > f.fewest ? " to " + std::to_string(f.most) : "") +
                   " characters) are not supported: generation could begin a value it cannot finish");
    }
  }

  // Whether no value satisfies both nodes, as far as their types, enum values and required
  // properties show (a required property with disjoint schemas in both: a discriminator, as
  // pydantic's tagged unions have). False when it cannot tell.
  bool disjoint(int a, int b, int depth) const {
    if (a == kJsonNoNode || b == kJsonNoNode) return true;
    if (a < 0 || b < 0 || depth > 16) return false;
    const JsonSchemaNode& x = nodes_[static_cast<std::size_t>(a)];
    const JsonSchemaNode& y = nodes_[static_cast<std::size_t>(b)];
    if (!x.any_of.empty()) return std::all_of(x.any_of.begin(), x.any_of.end(), [&](int c) { return disjoint(c, b, depth + 1); });
    if (!y.any_of.empty()) return std::all_of(y.any_of.begin(), y.any_of.end(), [&](int c) { return disjoint(a, c, depth + 1); });
    if (!x.enum_values.empty() && !y.enum_values.empty()) {
      for (const std::string& u : x.enum_values) {
        for (const std::string& v : y.enum_values) {
          if (!values_differ(u, v)) return false;
        }
      }
      return true;
    }
    if (!x.enum_values.empty() || !y.enum_values.empty()) {
      const JsonSchemaNode& e = x.enum_values.empty() ? y : x;
      const JsonSchemaNode& t = x.enum_values.empty() ? x : y;
      return std::none_of(e.enum_values.begin(), e.enum_values.end(),
                          [&](const std::string& v) { return (value_class(v) & type_classes(t.types)) != 0; });
    }
    const unsigned shared = type_classes(x.types) & type_classes(y.types);
    if (shared == 0) return true;
    if (shared != kJsonObject) return false;
    return required_apart(x, y, depth) || required_apart(y, x, depth);
  }

  // Whether a property x requires is one y requires too with a disjoint schema, or one y's
  // additionalProperties: false leaves out.
  bool required_apart(const JsonSchemaNode& x, const JsonSchemaNode& y, int depth) const {
    for (std::size_t i = 0; i < x.properties.size(); ++i) {
      if (!x.required.test(i)) continue;
      const std::string& name = x.properties[i].first;
      const int node = x.properties[i].second;
      const auto it = std::find_if(y.properties.begin(), y.properties.end(), [&](const auto& q) { return q.first == name; });
      if (it == y.properties.end()) {
        if (y.additional == kJsonNoNode) return true;
        continue;
      }
      const auto k = static_cast<std::size_t>(it - y.properties.begin());
      if (y.required.test(k) && disjoint(node, it->second, depth + 1)) return true;
    }
    return false;
  }

  // A type mask with integer and number made one class (an integer is a number).
  static unsigned type_classes(unsigned types) {
    const unsigned numbers = kJsonInteger | kJsonNumber;
    return (types & numbers) != 0 ? types | numbers : types;
  }

  // The type class of an enum value's compact serialization.
  static unsigned value_class(const std::string& v) {
    switch (v.empty() ? '\0' : v[0]) {
      case 'n': return kJsonNull;
      case 't':
      case 'f': return kJsonBool;
      case '"': return kJsonString;
      case '[': return kJsonArray;
      case '{': return kJsonObject;
      default: return kJsonInteger | kJsonNumber;
    }
  }

  // Whether two enum values are surely different values: 1 and 1.0 are one number, and
  // arrays or objects that hold numbers could be equal written differently.
  static bool values_differ(const std::string& u, const std::string& v) {
    if (u == v) return false;
    const unsigned cu = value_class(u), cv = value_class(v);
    if (cu != cv) return true;
    if (cu == (kJsonInteger | kJsonNumber)) return std::strtod(u.c_str(), nullptr) != std::strtod(v.c_str(), nullptr);
    return cu != kJsonArray && cu != kJsonObject;
  }

  // anyOf / oneOf whose branches take different types: the first byte of a value picks one.
  int alternatives(const json& s, const std::string& at) {
    const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
    const json& v = s[key];
    const std::string here = at + "/" + key;
    if (!v.is_array() || v.empty()) fail(here, "expected a non-empty array of schemas");
    if (constrains(s, {key})) {
      // Keywords next to anyOf / oneOf hold in every branch: distributed over them.
      const json* d = distributed(s, {}, at);
      if (d == nullptr) fail(here, "no branch allows a value next to the keywords beside " + std::string(key));
      distributed_[&s] = d;
      return compile(*d, at);
    }
    // A branch that allows no value ({"not": {}}) takes nothing: left out.
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!never(v[i])) live.push_back(i);
    }
    if (live.empty()) fail(here, "no branch allows a value");
    if (live.size() == 1) return compile(v[live[0]], here + "/" + std::to_string(live[0]));
    const int index = reserve(s, here);
    std::vector<int> branches;
    for (std::size_t i : live) branches.push_back(compile(v[i], here + "/" + std::to_string(i)));
    JsonSchemaNode merged;
    merged.types = 0;
    bool has_enum = false;
    for (int b : branches) {
      if (b == kJsonAnyNode && std::string(key) == "anyOf") return fill(index, JsonSchemaNode());  // any value
      if (b < 0 || b == index) fail(here, "a branch that allows any value cannot be told from the others");
      has_enum |= !nodes_[static_cast<std::size_t>(b)].enum_values.empty();
    }
    // oneOf equals anyOf when no value can match two branches: checked once every node is
    // compiled (a branch may be a schema this one is part of).
    if (std::string(key) == "oneOf") one_of_.push_back({here, branches, live});
    if (std::any_of(branches.begin(), branches.end(), [&](int b) { return pending(b); }) || !first_byte_decides(branches)) {
      merged.types = kJsonAnyType;
      merged.any_of = branches;
      return fill(index, std::move(merged));
    }
    for (std::size_t i = 0; i < branches.size(); ++i) {
      const JsonSchemaNode& n = nodes_[static_cast<std::size_t>(branches[i])];
      const std::string where = here + "/" + std::to_string(live[i]);
      if (has_enum) {
        // Enums mix with null and boolean branches, spelled as values.
        std::vector<std::string> values = n.enum_values;
        if (values.empty()) {
          if ((n.types & ~(kJsonNull | kJsonBool)) != 0) fail(where, "an enum branch mixes only with null or boolean branches");
          if (n.types & kJsonNull) values.push_back("null");
          if (n.types & kJsonBool) values.insert(values.end(), {"false", "true"});
        }
        merged.enum_values.insert(merged.enum_values.end(), values.begin(), values.end());
        continue;
      }
      const unsigned numbers = kJsonInteger | kJsonNumber;
      if ((merged.types & n.types & ~numbers) != 0) fail(where, "branches whose types overlap are not supported");
      if ((merged.types & numbers) && (n.types & numbers) && (merged.bounded || n.bounded || merged.multiple_of > 0 || n.multiple_of > 0)) {
        fail(where, "a bounded number branch next to another number branch is not supported");
      }
      merged.types |= n.types;
      if (n.types & kJsonObject) {
        merged.properties = n.properties;
        merged.required = n.required;
        merged.additional = n.additional;
        merged.key_pattern = n.key_pattern;
        merged.key_match = n.key_match;
        merged.min_properties = n.min_properties;
        merged.max_properties = n.max_properties;
      }
      if (n.types & kJsonArray) {
        merged.prefix_items = n.prefix_items;
        merged.unique_items = n.unique_items;
        merged.unique_domain = n.unique_domain;
        merged.items = n.items;
        merged.min_items = n.min_items;
        merged.max_items = n.max_items;
      }
      if (n.types & (kJsonInteger | kJsonNumber)) {
        merged.bounded = n.bounded;
        merged.multiple_of = n.multiple_of;
        merged.decimal = n.decimal;
        merged.minimum = n.minimum;
        merged.maximum = n.maximum;
        merged.min_scaled = n.min_scaled;
        merged.max_scaled = n.max_scaled;
      }
      if (n.types & kJsonString) {
        merged.min_length = n.min_length;
        merged.max_length = n.max_length;
        merged.format = n.format;
        merged.pattern = n.pattern;
      }
    }
    if (merged.types & kJsonNumber) merged.types &= ~kJsonInteger;  // integer or number: a number
    if (has_enum) {
      merged.types = kJsonAnyType;
      std::sort(merged.enum_values.begin(), merged.enum_values.end());
      merged.enum_values.erase(std::unique(merged.enum_values.begin(), merged.enum_values.end()), merged.enum_values.end());
    }
    return fill(index, std::move(merged));
  }

  // A oneOf's branches, followed as anyOf's: refused where a value could match two.
  void check_one_of(const OneOf& o) const {
    for (std::size_t j = 1; j < o.branches.size(); ++j) {
      for (std::size_t i = 0; i < j; ++i) {
        if (disjoint(o.branches[i], o.branches[j], 0)) continue;
        fail(o.here + "/" + std::to_string(o.numbers[j]), "a value could match this branch and branch " + std::to_string(o.numbers[i]) +
                                                 " (and then must be refused); oneOf branches are supported when their "
                                                 "types, enum values or a required property with different const values "
                                                 "(a discriminator) tell them apart; anyOf takes overlapping branches");
      }
    }
  }

  const json& root_;
  std::string what_;
  std::vector<JsonSchemaNode> nodes_;
  std::vector<std::string> places_;  // where each node's schema is
  std::vector<JsonPattern> patterns_;
  std::int64_t length_budget_ = std::int64_t{1} << 26;  // measure_lengths' position x length steps left
  std::vector<std::unique_ptr<json>> made_;  // schemas made from parts of others (keep())
  std::map<const json*, int> memo_;
  std::map<const json*, std::string> base_;       // base URIs (index_resources; made schemas)
  std::map<const json*, std::string> where_;      // JSON pointers of the document's schemas
  std::map<std::string, const json*> resources_;  // "$id" (absolute or as written) -> schema
  std::map<std::string, const json*> anchors_;    // "URI#name" -> schema
  std::string base_now_;
  static constexpr int kMaxDistributedBranches = 4096;
  int distributed_branches_ = 0;  // made by distributed() so far                          // while compiling: the base URI of the schema at hand
  std::map<const json*, const json*> distributed_;  // anyOf / oneOf with keywords beside it: its rewriting
  std::vector<char> filled_;  // per node: compiled (see reserve())
  std::vector<OneOf> one_of_;  // oneOf branches, checked in run()
  int depth_ = 0;
};

}  // namespace

JsonSchema JsonSchema::parse(std::string_view text, const std::string& what) {
  check_json_limits(text, what);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    invalid_argument(what + ": not valid JSON (" + e.what() + ")");
  }
  return Compiler(doc, what).run();
}

PropertySet JsonSchemaNode::must_give(const PropertySet& present) const {
  PropertySet x = required;
  if (dependent_required.empty()) return x;
  for (bool grew = true; grew;) {
    PropertySet next = x, from = present;
    from |= x;
    from.each([&](std::size_t p) { next |= dependent_required[p]; });
    grew = !(next == x);
    x = next;
  }
  return x;
}

JsonSchema JsonSchema::any_object() {
  JsonSchema s;
  JsonSchemaNode n;
  n.types = kJsonObject;
  s.nodes.push_back(n);
  s.root = 0;
  return s;
}

}  // namespace staticlm
