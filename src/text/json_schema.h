// A JSON Schema compiled for constrained generation (OpenAI's response_format json_schema,
// llama.cpp's --json-schema): the subset a byte-level matcher can enforce exactly. Supported:
// type (one or a list), enum, const (their values kept where the keywords beside them allow),
// properties (false: that key is not given), required, additionalProperties (false, true or a
// schema), propertyNames (an enum or const of names: compiled to those properties and no other
// key), dependentRequired (and Draft 7's dependencies with lists of names), minProperties,
// maxProperties, items, prefixItems, uniqueItems (of null, boolean, integer, plain string or
// enum items), minItems, maxItems, minLength, maxLength, pattern (json_pattern.h), format
// (json_format.h), minimum / maximum / exclusiveMinimum / exclusiveMaximum, integer multipleOf,
// anyOf (overlapping branches are followed side by side) / oneOf of branches no value matches
// two of, allOf (merged into one node), $ref to "#", a JSON pointer into the document or an
// anchor. Annotations (title, description, default, examples, other formats, $schema, $id,
// $comment, ...) and keywords outside JSON Schema's vocabulary are ignored; JSON Schema's other
// keywords (not, if / then / else, ...) are refused by place, so a schema is never half
// enforced. patternProperties (one pattern) and a propertyNames pattern are enforced on keys.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/json_format.h"
#include "text/json_pattern.h"

namespace staticlm {

// Value types, as bits.
enum JsonType : unsigned {
  kJsonNull = 1,
  kJsonBool = 2,
  kJsonInteger = 4,
  kJsonNumber = 8,  // any number (integers included)
  kJsonString = 16,
  kJsonArray = 32,
  kJsonObject = 64,
  kJsonAnyType = 127,
};

// Node indices with a meaning of their own.
constexpr int kJsonAnyNode = -1;  // any JSON value
constexpr int kJsonNoNode = -2;   // nothing allowed (additionalProperties: false, items: false)

// A set of an object's listed properties, by index (up to kMaxProperties).
class PropertySet {
 public:
  static constexpr std::size_t kMaxProperties = 256;
  bool test(std::size_t i) const { return (w_[i / 64] >> (i % 64)) & 1; }
  void set(std::size_t i) { w_[i / 64] |= std::uint64_t{1} << (i % 64); }
  std::size_t count() const {
    std::size_t n = 0;
    for (std::uint64_t w : w_) n += static_cast<std::size_t>(std::popcount(w));
    return n;
  }
  bool none() const { return count() == 0; }
  PropertySet& operator|=(const PropertySet& o) {
    for (std::size_t i = 0; i < w_.size(); ++i) w_[i] |= o.w_[i];
    return *this;
  }
  // The members of this set that `o` lacks.
  PropertySet without(const PropertySet& o) const {
    PropertySet r = *this;
    for (std::size_t i = 0; i < w_.size(); ++i) r.w_[i] &= ~o.w_[i];
    return r;
  }
  bool intersects(const PropertySet& o) const {
    for (std::size_t i = 0; i < w_.size(); ++i) {
      if (w_[i] & o.w_[i]) return true;
    }
    return false;
  }
  // f(i) for each member, in order.
  template <class F>
  void each(F f) const {
    for (std::size_t k = 0; k < w_.size(); ++k) {
      for (std::uint64_t b = w_[k]; b != 0; b &= b - 1) f(64 * k + static_cast<std::size_t>(std::countr_zero(b)));
    }
  }
  bool operator==(const PropertySet&) const = default;

 private:
  std::array<std::uint64_t, kMaxProperties / 64> w_{};
};

struct JsonSchemaNode {
  unsigned types = kJsonAnyType;
  std::vector<std::string> enum_values;  // compact serializations, sorted; empty: no enum
  // Objects: properties by their name as written inside a JSON string (escaped), sorted; at most
  // PropertySet::kMaxProperties.
  std::vector<std::pair<std::string, int>> properties;
  PropertySet required;
  // dependentRequired (Draft 7's dependencies with name lists): [i] holds j when properties[i]
  // given requires properties[j]; empty when none.
  std::vector<PropertySet> dependent_required;
  // The listed properties an object with `present` given must give before it closes: the
  // required ones and, to the closure, the dependentRequired ones of each given or to give.
  PropertySet must_give(const PropertySet& present) const;
  int additional = kJsonAnyNode;
  // patternProperties' pattern (one; in JsonSchema::patterns) and the schema of a key not listed
  // that it matches (`additional`: one it does not match). A propertyNames pattern is the same
  // with `additional` false: every other key matches it. -1: none.
  int key_pattern = -1;
  int key_match = kJsonAnyNode;
  std::int64_t min_properties = 0, max_properties = -1;  // -1: no limit
  // Arrays.
  std::vector<int> prefix_items;
  int items = kJsonAnyNode;
  std::int64_t min_items = 0, max_items = -1;  // -1: no limit
  // uniqueItems: items (of `items`, whose values have one spelling each) are distinct; how many
  // distinct values `items` has (-1: more than any array holds).
  bool unique_items = false;
  std::int64_t unique_domain = -1;
  // minimum, maximum and the exclusive ones, made inclusive, on the node's numbers. Integers
  // ("type": "integer" without "number"): in minimum / maximum. Numbers (`decimal`): written
  // without an exponent, at most kDecimalIntegerDigits digits before the point and
  // kDecimalPlaces after it, bounded in units of 10^-kDecimalPlaces: min_scaled / max_scaled are
  // the least and greatest such values a reader's double (strtod) of the text keeps in range.
  static constexpr int kDecimalIntegerDigits = 12;
  static constexpr int kDecimalPlaces = 6;
  static constexpr std::int64_t kDecimalUnit = 1000000;                        // 10^kDecimalPlaces
  static constexpr std::int64_t kDecimalMax = kDecimalUnit * 1000000000000 - 1;  // 12 + 6 nines
  bool bounded = false;
  std::int64_t multiple_of = 0;  // multipleOf, an integer (0: none); numbers are then written as integers
  bool decimal = false;
  std::int64_t minimum = INT64_MIN, maximum = INT64_MAX;
  std::int64_t min_scaled = 0, max_scaled = 0;
  // Strings, in code points; `format` (json_format.h) when the schema names one enforced.
  std::int64_t min_length = 0, max_length = -1;
  JsonFormat format = JsonFormat::kNone;
  int pattern = -1;  // index in JsonSchema::patterns; -1: none
  // anyOf whose branches overlap (two object schemas, say): a value valid for any of these
  // nodes; the matcher follows every branch the bytes so far fit. The fields above are unused.
  std::vector<int> any_of;
};

struct JsonSchema {
  std::vector<JsonSchemaNode> nodes;
  std::vector<JsonPattern> patterns;  // the nodes' `pattern`s
  int root = kJsonAnyNode;

  // Compiles a schema's JSON text. Throws kInvalidArgument naming `what` and the keyword's place
  // (e.g. "json_schema at /properties/age: 'minimum' is not supported").
  static JsonSchema parse(std::string_view text, const std::string& what);
  // Any JSON object (OpenAI's response_format json_object).
  static JsonSchema any_object();
};

}  // namespace staticlm
