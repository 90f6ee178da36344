#include "text/json_matcher.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "text/json_format.h"
#include "text/json_schema.h"

namespace staticlm {
namespace {

// Whether the matcher takes every byte of `text` and then holds a whole value.
bool matches(const JsonSchema& s, const std::string& text) {
  JsonMatcher m(s);
  for (unsigned char c : text) {
    if (!m.feed(c)) return false;
  }
  return m.complete();
}

// Whether every byte of `text` is taken (a prefix of some valid value).
bool prefix(const JsonSchema& s, const std::string& text) {
  JsonMatcher m(s);
  for (unsigned char c : text) {
    if (!m.feed(c)) return false;
  }
  return true;
}

JsonSchema schema(const std::string& text) { return JsonSchema::parse(text, "json_schema"); }

// The message a schema is refused with ("accepted" when it compiles).
std::string refusal(const std::string& text) {
  try {
    (void)schema(text);
    return "accepted";
  } catch (const Error& e) {
    return e.what();
  }
}

// A random value the matcher lets through: bytes picked at random among those it takes, until
// none is taken or (when stop_one_in > 0) at random once the value is whole. Sets *dead_end
// when it stops on a prefix no byte continues that is not a whole value.
std::string random_value(const JsonSchema& s, std::uint32_t& rng, unsigned stop_one_in, bool* dead_end) {
  const auto next = [&rng] { return rng = rng * 1664525u + 1013904223u; };
  JsonMatcher m(s);
  std::string text;
  for (;;) {
    std::vector<unsigned char> can;
    for (int b = 0; b < 256; ++b) {
      JsonMatcher t = m;
      if (t.feed(static_cast<unsigned char>(b))) can.push_back(static_cast<unsigned char>(b));
    }
    if (can.empty() || (stop_one_in > 0 && m.complete() && next() % stop_one_in == 0)) break;
    const unsigned char b = can[next() % can.size()];
    m.feed(b);
    text.push_back(static_cast<char>(b));
  }
  *dead_end = !m.complete();
  return text;
}

TEST(JsonMatcher, AnyValueIsJsonAndNothingElse) {
  const JsonSchema any = schema("{}");
  for (const char* ok : {"0", "-1.5e+3", "\"a\\u00e9\\n\"", "true", "null", "[]", "[1, [2, {}]]",
                         "{\"a\": {\"b\": [true, false, null]}, \"c\": \"\xc3\xa9\"}", " {\n  \"k\" : 1 }"}) {
    EXPECT_TRUE(matches(any, ok)) << ok;
    EXPECT_TRUE(nlohmann::json::accept(ok)) << ok;  // the reference parser agrees
  }
  for (const char* bad : {"01", "-", "1.", "1e", "+1", "tru", "nul", "[1,]", "{\"a\" 1}", "{,}", "\"\\x\"", "\"\\u12g4\"",
                          "{\"a\":1,}", "[1 2]", "\"\xc3\"", "\"\x01\"", "'a'", "{a:1}", "[1]]"}) {
    EXPECT_FALSE(matches(any, bad)) << bad;
    EXPECT_FALSE(nlohmann::json::accept(bad)) << bad;
  }
  // Nothing after the value, not even whitespace (the end token comes next).
  EXPECT_FALSE(matches(any, "\"a\" "));
  // A number is whole at every digit; a string only once closed.
  EXPECT_TRUE(prefix(any, "12") && matches(any, "12"));
  EXPECT_TRUE(prefix(any, "\"ab") && !matches(any, "\"ab"));
}

// Strings are what strict readers take: UTF-8 without overlong forms, encoded surrogates or
// code points past U+10FFFF, and \u escapes whose surrogates come in pairs (found by the
// json_schema fuzz target against nlohmann's parser). A pair counts as one character.
TEST(JsonMatcher, StringsAreStrictUtf8AndPairedSurrogates) {
  const JsonSchema any = schema("{}");
  for (const char* ok : {"\"\\ud83d\\ude00\"", "\"\\uD83D\\uDE00x\"", "\"\\u00e9\\ud7ff\\ue000\"", "\"\xed\x9f\xbf\"",
                         "\"\xf4\x8f\xbf\xbf\"", "\"\xf0\x90\x80\x80\"", "\"\xe0\xa0\x80\"", "\"\xef\xbf\xbd\"", "\"\xc2\x80\""}) {
    EXPECT_TRUE(matches(any, ok)) << ok;
    EXPECT_TRUE(nlohmann::json::accept(ok)) << ok;
  }
  for (const char* bad : {"\"\\ud800\"", "\"\\ud800x\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\ud800\\ud800\"",
                          "\"\xe0\x80\x80\"", "\"\xf0\x8c\xb7\x9a\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xc0\xaf\""}) {
    EXPECT_FALSE(matches(any, bad)) << bad;
    EXPECT_FALSE(nlohmann::json::accept(bad)) << bad;
  }
  EXPECT_TRUE(prefix(any, "\"\\ud83d\\") && !prefix(any, "\"\\ud83dx"));
  const JsonSchema one = schema(R"({"type": "string", "maxLength": 1})");
  EXPECT_TRUE(matches(one, "\"\\ud83d\\ude00\""));
  EXPECT_FALSE(prefix(one, "\"\\ud83d\\ude00a"));
}

TEST(JsonMatcher, ObjectSchemaWithRequiredAndNoOtherKeys) {
  const JsonSchema s = schema(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 3},
      "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["a", "bc"]}, "maxItems": 2}},
      "required": ["name", "age"], "additionalProperties": false})");
  EXPECT_TRUE(matches(s, R"({"name": "Al", "age": 3})"));
  EXPECT_TRUE(matches(s, R"({"age":-3,"name":"","tags":["bc","a"]})"));
  EXPECT_FALSE(matches(s, R"({"name": "Al"})"));                      // age is required
  EXPECT_FALSE(prefix(s, R"({"nam ")"));                              // no such key
  EXPECT_FALSE(prefix(s, R"({"nick")"));                              // no key starts so
  EXPECT_FALSE(prefix(s, R"({"name": "Al", "name")"));               // given twice
  EXPECT_FALSE(prefix(s, R"({"name": "Al", "nam)"));                 // already given: a dead end
  EXPECT_TRUE(prefix(schema(R"({"properties": {"a": {}}})"), R"({"a": 1, "a)"));  // others allowed: "ab" may come
  EXPECT_FALSE(prefix(s, R"({"name": "Alan")"));                     // maxLength 3
  EXPECT_FALSE(prefix(s, R"({"age": 1.5)"));                         // an integer
  EXPECT_FALSE(prefix(s, R"({"age": 1, "tags": ["c)"));               // enum
  EXPECT_FALSE(prefix(s, R"({"age": 1, "tags": ["a", "a", )"));       // maxItems 2
  EXPECT_FALSE(prefix(s, "[")) << "the root is an object";
  EXPECT_TRUE(prefix(s, R"({"name": "Al", "age": 1, "tags": [)"));
}

// JSON Schema's "required" names keys the object must have whether or not "properties" lists
// them; an unlisted one's value is whatever additionalProperties allows.
TEST(JsonMatcher, RequiredKeysOutsideThePropertiesTakeTheAdditionalSchema) {
  const JsonSchema any = schema(R"({"type": "object", "required": ["a"]})");
  EXPECT_TRUE(matches(any, R"({"a": 1})"));
  EXPECT_TRUE(matches(any, R"({"b": [true], "a": {"x": null}})"));
  EXPECT_FALSE(matches(any, R"({})"));
  EXPECT_FALSE(matches(any, R"({"b": 1})"));
  EXPECT_FALSE(prefix(any, R"({"a": 1, "a")"));  // given twice
  const JsonSchema typed = schema(R"({"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["a", "b"],
      "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(matches(typed, R"({"b": 2, "a": "x"})"));
  EXPECT_TRUE(matches(typed, R"({"a": "x", "b": 2, "c": "y"})"));
  EXPECT_FALSE(prefix(typed, R"({"a": 1)"));  // a takes additionalProperties' schema
  EXPECT_FALSE(matches(typed, R"({"b": 2})"));
  EXPECT_FALSE(matches(typed, R"({"a": "x"})"));
  // What the matcher writes always holds both keys, and never stops short of a whole value
  // (maxProperties leaves room for no other key, so random bytes find the two).
  const JsonSchema two = schema(R"({"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["a", "b"],
      "additionalProperties": {"type": "string", "maxLength": 3}, "maxProperties": 2})");
  std::uint32_t rng = 7;
  for (int i = 0; i < 200; ++i) {
    bool dead_end = false;
    const std::string text = random_value(two, rng, 4, &dead_end);
    ASSERT_FALSE(dead_end) << text;
    const nlohmann::json v = nlohmann::json::parse(text);
    ASSERT_TRUE(v.contains("a") && v["a"].is_string()) << text;
    ASSERT_TRUE(v.contains("b") && v["b"].is_number_integer()) << text;
  }
  // Annotations of Draft 2020-12 constrain nothing.
  EXPECT_TRUE(matches(schema(R"({"type": "string", "contentEncoding": "base64", "contentMediaType": "image/png"})"), "\"x\""));
}

// JSON Schema's validators ignore keywords outside its vocabulary (OpenAPI's example and
// nullable, editors' markdownDescription, x-... extensions, Gemini's propertyOrdering): so does
// the compiler. Draft 7's tuple items are 2020-12's prefixItems. Bounds from two parts that
// must both hold intersect.
TEST(JsonMatcher, OtherVocabulariesDraft7TuplesAndIntersectedBounds) {
  const JsonSchema s = schema(R"({"type": "object", "properties": {"a": {"type": "string", "x-order": 1, "example": "e",
      "markdownDescription": "m", "nullable": true, "deprecationMessage": "d"}}, "propertyOrdering": ["a"],
      "required": ["a"], "additionalProperties": false})");
  EXPECT_TRUE(matches(s, R"({"a": "x"})"));
  EXPECT_FALSE(prefix(s, R"({"a": n)"));  // nullable is OpenAPI's, not JSON Schema's
  const JsonSchema tuple = schema(R"({"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "additionalItems": false})");
  EXPECT_TRUE(matches(tuple, R"([1, "a"])"));
  EXPECT_TRUE(matches(tuple, "[1]"));
  EXPECT_FALSE(prefix(tuple, R"(["a")"));
  EXPECT_FALSE(prefix(tuple, R"([1, "a", )"));
  EXPECT_TRUE(matches(schema(R"({"items": [{"type": "integer"}]})"), R"([1, "a", true])"));
  EXPECT_TRUE(matches(schema(R"({"type": "array", "additionalItems": false})"), "[1, 2]"));  // no items array: nothing
  const JsonSchema ref = schema(R"({"$defs": {"X": {"type": "integer", "minimum": 0}}, "$ref": "#/$defs/X", "maximum": 5})");
  for (const char* ok : {"0", "3", "5"}) EXPECT_TRUE(matches(ref, ok)) << ok;
  for (const char* bad : {"6", "-1", "10"}) EXPECT_FALSE(matches(ref, bad)) << bad;
  const JsonSchema numbers = schema(R"({"allOf": [{"type": "number", "minimum": 0.5}, {"maximum": 1.5, "exclusiveMinimum": 0.75}]})");
  EXPECT_TRUE(matches(numbers, "1.0"));
  EXPECT_TRUE(matches(numbers, "1.5"));
  EXPECT_FALSE(matches(numbers, "0.6"));
  EXPECT_FALSE(matches(numbers, "0.75"));
  EXPECT_FALSE(matches(numbers, "1.6"));
  try {
    (void)schema(R"({"allOf": [{"type": "integer", "minimum": 5}, {"maximum": 3}]})");
    ADD_FAILURE() << "empty intersection taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("json_schema at /allOf: no integer of at most 18 digits (what generation writes) lies between the parts' minimum and maximum"), std::string::npos)
        << e.what();
  }
}

TEST(JsonMatcher, EnumsConstsAnyOfAndRefs) {
  const JsonSchema e = schema(R"({"enum": [1, 12, "x", null, {"a": [1]}]})");
  for (const char* ok : {"1", "12", "\"x\"", "null", "{\"a\":[1]}"}) EXPECT_TRUE(matches(e, ok)) << ok;
  for (const char* bad : {"2", "123", "\"y\"", "{\"a\": [1]}", "true"}) EXPECT_FALSE(matches(e, bad)) << bad;
  // pydantic's Optional[int] and Optional[Literal]: anyOf of disjoint types.
  const JsonSchema o = schema(R"({"anyOf": [{"type": "integer"}, {"type": "null"}]})");
  EXPECT_TRUE(matches(o, "7") && matches(o, "null") && !matches(o, "\"7\""));
  const JsonSchema l = schema(R"({"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]})");
  EXPECT_TRUE(matches(l, "\"b\"") && matches(l, "null") && !matches(l, "\"c\""));
  EXPECT_TRUE(matches(schema(R"({"const": "on"})"), "\"on\""));
  // A tree through $defs and a recursive "#".
  const JsonSchema t = schema(R"({"$defs": {"Node": {"type": "object", "properties": {"v": {"type": "number"},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["v"], "additionalProperties": false}},
      "$ref": "#/$defs/Node"})");
  EXPECT_TRUE(matches(t, R"({"v": 1, "kids": [{"v": 2.5, "kids": []}, {"v": -0}]})"));
  EXPECT_FALSE(prefix(t, R"({"v": 1, "kids": [{"w")"));
  const JsonSchema r = schema(R"({"type": ["array", "string"], "items": {"$ref": "#"}, "minItems": 1})");
  EXPECT_TRUE(matches(r, R"(["a", ["b"]])"));
  EXPECT_FALSE(matches(r, "[]"));
  EXPECT_FALSE(matches(r, R"(["a", []])"));
  // Integer bounds, enforced digit by digit: no prefix that cannot end in range.
  const JsonSchema age = schema(R"({"type": "integer", "minimum": 18, "exclusiveMaximum": 130})");
  for (const char* ok : {"18", "42", "129", "100"}) EXPECT_TRUE(matches(age, ok)) << ok;
  for (const char* bad : {"17", "130", "1000", "-1", "0", "9"}) EXPECT_FALSE(matches(age, bad)) << bad;
  EXPECT_TRUE(prefix(age, "1") && !matches(age, "1"));  // 18..129 start so
  EXPECT_FALSE(prefix(age, "-"));
  EXPECT_FALSE(prefix(age, "0"));
  EXPECT_FALSE(prefix(age, "13"));  // 13 is too small, 130-139 too large
  EXPECT_TRUE(prefix(age, "12") && !prefix(age, "130"));
  const JsonSchema neg = schema(R"({"type": "integer", "minimum": -5, "maximum": -2})");
  EXPECT_TRUE(matches(neg, "-5") && matches(neg, "-2") && !prefix(neg, "-6") && !prefix(neg, "-1") && !prefix(neg, "3"));
  EXPECT_FALSE(matches(neg, "-"));
  const JsonSchema counted = schema(R"({"type": "object", "additionalProperties": {"type": "number"}, "minProperties": 1,
      "maxProperties": 2})");
  EXPECT_TRUE(matches(counted, R"({"a": 1, "b": 2})") && matches(counted, R"({"x": 0.5})"));
  EXPECT_FALSE(matches(counted, "{}"));
  EXPECT_FALSE(prefix(counted, R"({"a": 1, "b": 2, )"));
  EXPECT_FALSE(prefix(counted, R"({"a": "1")"));
  const JsonSchema p = schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false})");
  EXPECT_TRUE(matches(p, R"(["a", true])") && matches(p, "[\"a\"]"));
  EXPECT_FALSE(prefix(p, R"(["a", true, )"));
  EXPECT_FALSE(prefix(p, "[1"));
}

// Cases where generated values failed Python's jsonschema (session 32): each checked by what the
// matcher takes whole and what it refuses.
TEST(JsonMatcher, SiblingsRecursionBoundsAndKeysHoldTogether) {
  // An anyOf branch that refers back to the schema being compiled: followed as that schema,
  // not read before it is filled in (pydantic's `Union[float, "Expr"]`).
  const JsonSchema rec = schema(R"({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}},
      "additionalProperties": false})");
  EXPECT_TRUE(matches(rec, R"({"a": {"a": 3}})") && matches(rec, R"({"a": 1})") && matches(rec, "{}"));
  EXPECT_FALSE(prefix(rec, R"({"a": ")"));
  EXPECT_FALSE(prefix(rec, R"({"a": {"b")"));
  const JsonSchema tree = schema(R"({"oneOf": [{"type": "integer"}, {"$ref": "#/$defs/N"}],
      "$defs": {"N": {"type": "object", "properties": {"k": {"$ref": "#"}}, "required": ["k"], "additionalProperties": false}}})");
  EXPECT_TRUE(matches(tree, R"({"k": {"k": 2}})") && !prefix(tree, R"({"k": "x)") && !matches(tree, "{}"));
  // pydantic v1's field wrapper around a reference back to the model being compiled.
  const JsonSchema v1 = schema(R"({"definitions": {"Node": {"type": "object", "properties": {"v": {"type": "integer"},
      "next": {"allOf": [{"$ref": "#/definitions/Node"}], "description": "the next one"}}, "required": ["v"], "additionalProperties": false}},
      "$ref": "#/definitions/Node"})");
  EXPECT_TRUE(matches(v1, R"({"v": 1, "next": {"v": 2}})"));
  EXPECT_FALSE(prefix(v1, R"({"v": 1, "next": {"w")"));
  EXPECT_FALSE(prefix(v1, R"({"v": 1, "next": 3)"));
  // enum / const keep the values the keywords beside them allow.
  const JsonSchema se = schema(R"({"type": "string", "enum": ["a", null, "abc"], "maxLength": 2})");
  EXPECT_TRUE(matches(se, "\"a\""));
  EXPECT_FALSE(prefix(se, "n"));
  EXPECT_FALSE(matches(se, "\"abc\""));
  const JsonSchema req = schema(R"({"enum": [{"a": 1}, {"b": 2}], "required": ["b"]})");
  EXPECT_TRUE(matches(req, R"({"b":2})") && !prefix(req, R"({"a")"));
  const JsonSchema bounded = schema(R"({"enum": [1, 5, 30, "q"], "maximum": 10})");
  EXPECT_TRUE(matches(bounded, "1") && matches(bounded, "5") && matches(bounded, "\"q\"") && !prefix(bounded, "3"));
  const JsonSchema both = schema(R"({"enum": ["a", "b"], "const": "b"})");
  EXPECT_TRUE(matches(both, "\"b\"") && !prefix(both, "\"a"));
  const JsonSchema parts = schema(R"({"allOf": [{"enum": ["a", "b", "c"]}, {"enum": ["b", "c"]}, {"pattern": "^c"}]})");
  EXPECT_TRUE(matches(parts, "\"c\"") && !prefix(parts, "\"b"));
  // Integer bounds are exact past 2^53 and the 18 digits generation writes.
  const JsonSchema big = schema(R"({"type": "integer", "minimum": 9007199254740993, "maximum": 9007199254740993})");
  EXPECT_TRUE(matches(big, "9007199254740993"));
  EXPECT_FALSE(matches(big, "9007199254740992"));
  const JsonSchema edge = schema(R"({"type": "integer", "minimum": 9007199254740992, "exclusiveMaximum": 9007199254740993})");
  EXPECT_TRUE(matches(edge, "9007199254740992") && !matches(edge, "9007199254740993"));
  EXPECT_TRUE(matches(schema(R"({"type": "integer", "minimum": 999999999999999999})"), "999999999999999999"));
  // Draft 4's boolean form (OpenAPI 3.0): exclusiveMinimum / exclusiveMaximum true make the bound exclusive.
  const JsonSchema d4 = schema(R"({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": false})");
  EXPECT_TRUE(matches(d4, "1") && matches(d4, "5") && !matches(d4, "0") && !prefix(d4, "6"));
  const JsonSchema d4n = schema(R"({"type": "number", "maximum": 1.5, "exclusiveMaximum": true})");
  EXPECT_TRUE(matches(d4n, "1.499999") && !matches(d4n, "1.5"));
  // A key is given once, unlisted ones too, and written in one spelling so that equal keys look equal.
  const JsonSchema counted = schema(R"({"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}})");
  EXPECT_FALSE(prefix(counted, R"({"": 0, "":)"));
  EXPECT_FALSE(prefix(counted, R"({"x": 1, "x")"));
  EXPECT_TRUE(matches(counted, R"({"": 0, "a": 8})"));
  const JsonSchema any = schema(R"({"type": "object"})");
  EXPECT_FALSE(prefix(any, R"({"a": {"b": 1, "b")"));
  EXPECT_TRUE(matches(any, R"({"a": {"b": 1}, "b": {"b": 2}, "c": {"a": 1, "b": 3}})"));
  EXPECT_FALSE(prefix(any, R"({"a": {"b": 1}, "b": {"b": 2}, "a")"));
  EXPECT_TRUE(matches(any, R"({"\n": 1, "\u001f": 2, "\"": 3, "é": 4})"));
  for (const char* other : {R"({"\u0061)", R"({"\/)", R"({"\u000a)", R"({"\u001F)", R"({"\u00e9)"}) EXPECT_FALSE(prefix(any, other)) << other;
  const JsonSchema slash = schema(R"({"type": "object", "properties": {"a/b": {"type": "integer"}}, "additionalProperties": {"type": "string"}})");
  EXPECT_TRUE(matches(slash, R"({"a/b": 1})") && !prefix(slash, R"({"a\/b)"));
  // false under properties forbids that key only; false items end the array there.
  const JsonSchema no_b = schema(R"({"properties": {"a": {"type": "integer"}, "b": false}, "required": ["a"]})");
  EXPECT_TRUE(matches(no_b, R"({"a": 1, "bc": 2})"));
  EXPECT_FALSE(prefix(no_b, R"({"a": 1, "b":)"));
  const JsonSchema pair = schema(R"({"type": "array", "prefixItems": [{"type": "integer"}, false]})");
  EXPECT_TRUE(matches(pair, "[1]") && !prefix(pair, "[1, 2"));
  // {"not": {}} allows no value, as false (zod-to-json-schema writes it for z.undefined()): a
  // property or item forbidden, an anyOf / oneOf branch left out (the others keep their numbers).
  const JsonSchema zod = schema(R"({"type": "object", "properties": {"a": {"anyOf": [{"not": {}}, {"type": "string"}]},
      "b": {"not": {}, "description": "never"}}})");
  EXPECT_TRUE(matches(zod, R"({"a": "x", "c": 1})"));
  EXPECT_FALSE(prefix(zod, R"({"a": 1)"));
  EXPECT_FALSE(prefix(zod, R"({"b":)"));
  EXPECT_EQ(refusal(R"({"oneOf": [{"not": true}, {"type": "integer"}, {"type": "number"}]})").rfind(
                "json_schema at /oneOf/2: a value could match this branch and branch 1", 0),
            0u);
  EXPECT_EQ(refusal(R"({"anyOf": [{"not": {}}, false]})"), "json_schema at /anyOf: no branch allows a value");
  EXPECT_EQ(refusal(R"({"not": {}})").rfind("json_schema at /: a schema that allows no value (false, or not: {})", 0), 0u);
  EXPECT_EQ(refusal(R"({"not": {"type": "string"}})"), "json_schema at /not: 'not' is not supported (it could not be enforced while generating)");
  // References are JSON pointers: ~1 is '/', ~0 '~', %XX an escaped byte, any place in the document.
  EXPECT_TRUE(matches(schema(R"({"$defs": {"a/b~": {"type": "integer"}}, "$ref": "#/$defs/a~1b~0"})"), "3"));
  EXPECT_TRUE(matches(schema(R"({"$defs": {"a b": {"type": "boolean"}}, "$ref": "#/$defs/a%20b"})"), "true"));
  const JsonSchema local = schema(R"({"type": "object", "properties": {"x": {"$ref": "#/properties/y"}, "y": {"type": "integer"}}})");
  EXPECT_TRUE(matches(local, R"({"x": 1})") && !prefix(local, R"({"x": ")"));
  EXPECT_TRUE(matches(schema(R"({"prefixItems": [{"type": "null"}], "items": {"$ref": "#/prefixItems/0"}})"), "[null, null]"));
  // ... or anchors: 2020-12's $anchor, Draft 7's "$id": "#name".
  const JsonSchema anchor = schema(R"({"$defs": {"x": {"$anchor": "item", "type": "integer"}, "y": {"$id": "#flag", "type": "boolean"}},
      "type": "array", "prefixItems": [{"$ref": "#item"}, {"$ref": "#flag"}]})");
  EXPECT_TRUE(matches(anchor, "[1, true]") && !prefix(anchor, "[true") && !prefix(anchor, "[1, 2"));
}

// uniqueItems (pydantic's Set[...]): an item equal to one before is refused where it ends, and
// a prefix whose every ending is taken where it begins, so generation never reaches a dead end.
TEST(JsonMatcher, UniqueItemsAreDistinctWithoutDeadEnds) {
  const JsonSchema strings = schema(R"({"type": "array", "items": {"type": "string"}, "uniqueItems": true})");
  EXPECT_TRUE(matches(strings, R"(["a", "b", "ab", ""])"));
  EXPECT_FALSE(prefix(strings, R"(["a", "b", "a")"));
  EXPECT_TRUE(prefix(strings, R"(["a", "b", "ab)"));
  EXPECT_FALSE(prefix(strings, R"(["a", "\u0061)"));  // one spelling: "a" is written "a"
  const JsonSchema nested = schema(R"({"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true}})");
  EXPECT_TRUE(matches(nested, "[[1, 2], [1, 2], [2, 1]]"));  // distinct within each inner array
  EXPECT_FALSE(prefix(nested, "[[1, 2], [3, 3]"));
  const JsonSchema ints = schema(R"({"type": "array", "items": {"type": "integer"}, "uniqueItems": true})");
  EXPECT_TRUE(matches(ints, "[1, 10, -1, 0, 100]"));
  EXPECT_FALSE(prefix(ints, "[0, -0,"));
  EXPECT_FALSE(prefix(ints, "[0, 0"));     // a lone 0 takes no more digits: refused at once
  EXPECT_TRUE(prefix(ints, "[1, 1"));      // 1 is given, 10..19 are not
  EXPECT_FALSE(prefix(ints, "[1, 1,"));
  EXPECT_TRUE(matches(ints, "[1, 12]"));
  const JsonSchema small = schema(R"({"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 12}, "uniqueItems": true})");
  EXPECT_FALSE(prefix(small, "[10, 11, 12, 1, 1"));  // 1 and 10-12 given: nothing left that starts with 1
  EXPECT_TRUE(prefix(small, "[10, 11, 1, 1"));
  EXPECT_TRUE(matches(small, "[10, 11, 1, 12]"));
  const JsonSchema flags = schema(R"({"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": true})");
  EXPECT_TRUE(matches(flags, "[true, null, false]"));
  EXPECT_FALSE(prefix(flags, "[true, false, t"));
  EXPECT_FALSE(prefix(flags, "[true, false, null,"));  // three values, all given: only ] is left
  const JsonSchema colors = schema(R"({"type": "array", "items": {"enum": ["red", "green", 1, 12]}, "uniqueItems": true, "minItems": 2})");
  EXPECT_TRUE(matches(colors, R"(["green", 12, "red", 1])"));
  EXPECT_FALSE(prefix(colors, R"(["red", "r)"));
  EXPECT_TRUE(prefix(colors, "[1, 1") && !prefix(colors, "[1, 12, 1"));
  EXPECT_FALSE(prefix(colors, R"(["red", "green", 1, 12,)"));
  // Refused by place: items with many spellings of one value, or too few values for minItems.
  for (const char* bad : {R"({"type": "array", "uniqueItems": true})", R"({"type": "array", "items": {"type": "number"}, "uniqueItems": true})",
                          R"({"type": "array", "items": {"type": "string", "maxLength": 2}, "uniqueItems": true})",
                          R"({"type": "array", "items": {"enum": [1, 1.0]}, "uniqueItems": true})",
                          R"({"type": "array", "prefixItems": [{"type": "string"}], "uniqueItems": true})"}) {
    EXPECT_EQ(refusal(bad).rfind("json_schema at /: uniqueItems is supported for items of type null, boolean, integer or string", 0), 0u)
        << refusal(bad);
  }
  EXPECT_EQ(refusal(R"({"type": "array", "items": {"type": "boolean"}, "uniqueItems": true, "minItems": 3})"),
            "json_schema at /: minItems 3 with uniqueItems, but the items have only 2 distinct values");
  EXPECT_TRUE(matches(schema(R"({"type": "array", "uniqueItems": false})"), "[1, 1]"));
}

// multipleOf with an integer value, digit by digit: a prefix is taken while a multiple within the
// bounds still starts with it; numbers are then written as integers.
TEST(JsonMatcher, IntegerMultiplesAreEnforced) {
  const JsonSchema five = schema(R"({"type": "integer", "multipleOf": 5})");
  for (const char* ok : {"0", "5", "-10", "1000000", "-0"}) EXPECT_TRUE(matches(five, ok)) << ok;
  for (const char* bad : {"7", "-3", "11"}) EXPECT_FALSE(matches(five, bad)) << bad;
  EXPECT_TRUE(prefix(five, "1"));  // 10, 15, ...
  const JsonSchema range = schema(R"({"type": "integer", "multipleOf": 7, "minimum": 10, "maximum": 30})");
  for (const char* ok : {"14", "21", "28"}) EXPECT_TRUE(matches(range, ok)) << ok;
  EXPECT_FALSE(prefix(range, "3"));   // 30-39 has no multiple of 7 within 10..30
  EXPECT_FALSE(prefix(range, "15"));
  EXPECT_TRUE(prefix(range, "2") && !matches(range, "2"));
  const JsonSchema number = schema(R"({"type": "number", "multipleOf": 2, "maximum": 5.5})");
  EXPECT_TRUE(matches(number, "4") && !prefix(number, "4.") && !matches(number, "6"));
  const JsonSchema set = schema(R"({"type": "array", "items": {"type": "integer", "multipleOf": 3, "minimum": 0, "maximum": 9},
      "uniqueItems": true})");
  EXPECT_TRUE(matches(set, "[9, 0, 3, 6]"));
  EXPECT_FALSE(prefix(set, "[9, 0, 3, 6,"));  // the four multiples are given
  const JsonSchema listed = schema(R"({"enum": [5, 7, 10, "x"], "multipleOf": 5})");
  EXPECT_TRUE(matches(listed, "10") && matches(listed, "\"x\"") && !matches(listed, "7"));
  for (const auto& [text, message] : std::vector<std::pair<const char*, const char*>>{
           {R"({"type": "number", "multipleOf": 0.01})", "json_schema at /multipleOf: multipleOf is supported with integer values"},
           {R"({"multipleOf": 0})", "json_schema at /multipleOf: expected a number > 0"},
           {R"({"type": "integer", "multipleOf": 10, "minimum": 1, "maximum": 9})", "json_schema at /: no multiple of 10 of at most 18 digits"},
           {R"({"type": "array", "items": {"type": "integer", "multipleOf": 4, "minimum": 0, "maximum": 8}, "uniqueItems": true, "minItems": 4})",
            "json_schema at /: minItems 4 with uniqueItems, but the items have only 3 distinct values"}}) {
    EXPECT_EQ(refusal(text).rfind(message, 0), 0u) << refusal(text);
  }
}

TEST(JsonMatcher, WhitespaceAndNumbersAreBounded) {
  const JsonSchema any = schema("{}");
  EXPECT_TRUE(prefix(any, "[\n" + std::string(JsonMatcher::kMaxIndent, ' ') + "1,\n\t2, 3"));
  EXPECT_FALSE(prefix(any, "[\n" + std::string(JsonMatcher::kMaxIndent + 1, ' ')));
  EXPECT_FALSE(prefix(any, "[  "));
  EXPECT_FALSE(prefix(any, "[\n\n"));
  EXPECT_FALSE(prefix(any, "[\t"));
  EXPECT_TRUE(prefix(any, std::string(JsonMatcher::kMaxNumberBytes, '1')));
  EXPECT_FALSE(prefix(any, std::string(JsonMatcher::kMaxNumberBytes + 1, '1')));
  // A '.', 'e' or sign that a digit must follow is taken only while that digit fits (a random
  // walk once ended on "250.8148527143258971282E", 24 bytes, and nothing could follow).
  const std::string ones(JsonMatcher::kMaxNumberBytes - 2, '1');
  EXPECT_TRUE(matches(any, ones + ".5") && matches(any, ones + "e5") && matches(any, "-" + ones + "5"));
  EXPECT_FALSE(prefix(any, ones + "1."));
  EXPECT_FALSE(prefix(any, ones + "1e"));
  EXPECT_FALSE(prefix(any, ones + "e-"));
  EXPECT_FALSE(prefix(any, ones.substr(1) + "1.5e"));
  const JsonSchema integer = schema(R"({"type": "integer"})");
  EXPECT_TRUE(matches(integer, "-" + std::string(JsonMatcher::kMaxIntegerDigits, '9')));
  EXPECT_FALSE(prefix(integer, std::string(JsonMatcher::kMaxIntegerDigits + 1, '9')));
  EXPECT_TRUE(matches(any, "-1.5e-99") && !prefix(any, "1e400"));
  EXPECT_TRUE(prefix(any, std::string(JsonMatcher::kMaxDepth, '[')));
  EXPECT_FALSE(prefix(any, std::string(JsonMatcher::kMaxDepth + 1, '[')));
}

// Number bounds: written without an exponent, at most 12 digits before the point and 6 after,
// and in range as a reader's double of the text (strtod) sees it.
TEST(JsonMatcher, NumberBoundsHoldForTheParsedValue) {
  const JsonSchema unit = schema(R"({"type": "number", "minimum": 0, "maximum": 1})");
  for (const char* ok : {"0", "1", "0.5", "1.0", "1.000000", "0.000001", "-0", "-0.0", "0.999999"}) {
    EXPECT_TRUE(matches(unit, ok)) << ok;
  }
  for (const char* bad : {"1.000001", "-0.1", "2", "10", "1e0", "0.5e1", "0.1234567", "-1", "1.5"}) {
    EXPECT_FALSE(matches(unit, bad)) << bad;
  }
  EXPECT_FALSE(prefix(unit, "2"));
  EXPECT_FALSE(prefix(unit, "1.1"));
  EXPECT_FALSE(prefix(unit, "-0.0000001"));
  EXPECT_TRUE(prefix(unit, "1.") && !matches(unit, "1."));
  const JsonSchema open = schema(R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})");
  for (const char* ok : {"0.000001", "0.999999", "0.5"}) EXPECT_TRUE(matches(open, ok)) << ok;
  for (const char* bad : {"0", "0.0", "1", "1.0", "-0"}) EXPECT_FALSE(matches(open, bad)) << bad;
  const JsonSchema neg = schema(R"({"type": ["number", "null"], "minimum": -2.5, "maximum": -1.25})");
  for (const char* ok : {"-2.5", "-1.25", "-2", "-1.3", "null"}) EXPECT_TRUE(matches(neg, ok)) << ok;
  for (const char* bad : {"-1.2", "-2.6", "-1", "0", "-3", "-2.500001"}) EXPECT_FALSE(matches(neg, bad)) << bad;
  // 0.1 is not a double: the bound is the double nearest 0.1, which "0.1" parses to.
  const JsonSchema tenth = schema(R"({"type": "number", "minimum": 0.1, "maximum": 0.1})");
  EXPECT_TRUE(matches(tenth, "0.1") && matches(tenth, "0.100000"));
  EXPECT_FALSE(prefix(tenth, "0.11") || prefix(tenth, "0.09") || matches(tenth, "0.100001"));
  // An integer type keeps its own bounds; "number" takes integers too.
  EXPECT_TRUE(matches(schema(R"({"type": "number", "minimum": 3})"), "3") &&
              !matches(schema(R"({"type": "number", "minimum": 3})"), "2.999999"));

  // Random walks over the bytes each matcher takes: none reaches a dead end (a prefix no byte
  // continues and that is not whole), and every value completed parses (nlohmann) to a double
  // within the schema's bounds, compared in doubles here.
  struct Case {
    const char* text;
    double lo, hi;
    bool lo_open, hi_open;
  };
  const Case cases[] = {{R"({"type": "number", "minimum": 0, "maximum": 1})", 0, 1, false, false},
                        {R"({"type": "number", "exclusiveMinimum": -0.5, "maximum": 0.25})", -0.5, 0.25, true, false},
                        {R"({"type": "number", "minimum": 123.4567, "exclusiveMaximum": 123.45671})", 123.4567, 123.45671, false, true},
                        {R"({"type": "number", "minimum": -1e15})", -1e15, HUGE_VAL, false, false},
                        {R"({"type": "number", "maximum": -7.3e-3})", -HUGE_VAL, -7.3e-3, false, false},
                        {R"({"type": "number", "minimum": 99999.9999995, "maximum": 100000.0000004})", 99999.9999995, 100000.0000004, false, false}};
  std::uint32_t rng = 12345;
  for (const Case& c : cases) {
    const JsonSchema sc = schema(c.text);
    for (int walk = 0; walk < 300; ++walk) {
      bool dead_end = false;
      const std::string text = random_value(sc, rng, 4, &dead_end);
      ASSERT_FALSE(dead_end) << c.text << ": dead end after " << text;
      const double x = nlohmann::json::parse(text).get<double>();
      EXPECT_TRUE(c.lo_open ? x > c.lo : x >= c.lo) << c.text << ": " << text;
      EXPECT_TRUE(c.hi_open ? x < c.hi : x <= c.hi) << c.text << ": " << text;
    }
  }
}

// "format": date, time, date-time and uuid are enforced (a real calendar day, RFC 3339 times
// with an offset, 8-4-4-4-12 hex); those without a machine or a pattern stay annotations.
TEST(JsonMatcher, StringFormatsAreEnforced) {
  const JsonSchema date = schema(R"({"type": "string", "format": "date"})");
  for (const char* ok : {"\"2024-02-29\"", "\"2023-12-31\"", "\"0001-01-01\"", "\"2000-02-29\"", "\"1999-04-30\""}) {
    EXPECT_TRUE(matches(date, ok)) << ok;
  }
  for (const char* bad : {"\"2023-02-29\"", "\"1900-02-29\"", "\"2024-04-31\"", "\"2024-13-01\"", "\"2024-00-10\"",
                          "\"2024-01-00\"", "\"0000-01-01\"", "\"2024-1-01\"", "\"2024-01-01T\"", "\"\"", "\"24-01-01\""}) {
    EXPECT_FALSE(matches(date, bad)) << bad;
  }
  EXPECT_FALSE(prefix(date, "\"2023-02-3"));  // no day 30 or 31 in February
  EXPECT_FALSE(prefix(date, "\"2024-1-"));
  const JsonSchema time = schema(R"({"type": "string", "format": "time"})");
  for (const char* ok : {"\"23:59:59Z\"", "\"00:00:00.5+01:00\"", "\"12:30:00.123456-08:30\""}) EXPECT_TRUE(matches(time, ok)) << ok;
  for (const char* bad : {"\"24:00:00Z\"", "\"12:60:00Z\"", "\"12:00:60Z\"", "\"12:00:00\"", "\"12:00:00.Z\"",
                          "\"12:00:00.1234567Z\"", "\"12:00:00+24:00\"", "\"12:00Z\""}) {
    EXPECT_FALSE(matches(time, bad)) << bad;
  }
  // format_lengths, the bounds minLength / maxLength must leave open, are each format's real
  // shortest and longest values.
  for (const auto& [name, shortest, longest] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"date", "2000-02-29", "2000-02-29"},
           {"time", "00:00:00Z", "23:59:59.999999+14:00"},
           {"date-time", "2000-01-01T00:00:00Z", "2000-01-01T23:59:59.123456-08:00"},
           {"uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-426614174000"}}) {
    const JsonSchema f = schema(R"({"type": "string", "format": ")" + name + "\"}");
    EXPECT_TRUE(matches(f, "\"" + shortest + "\"") && matches(f, "\"" + longest + "\"")) << name;
    const FormatLengths lengths = format_lengths(json_format(name));
    EXPECT_EQ(lengths.fewest, static_cast<std::int64_t>(shortest.size())) << name;
    EXPECT_EQ(lengths.most, static_cast<std::int64_t>(longest.size())) << name;
    EXPECT_FALSE(prefix(f, "\"" + longest + "0")) << name;  // nothing longer
    EXPECT_NO_THROW((void)schema(R"({"format": ")" + name + R"(", "minLength": )" + std::to_string(shortest.size()) +
                                 R"(, "maxLength": )" + std::to_string(longest.size()) + "}"));
    // Tighter bounds could leave a begun value no way to end (the fuzz target's "2000-" under
    // maxLength 5): refused.
    for (const std::string& bound : {R"("maxLength": )" + std::to_string(longest.size() - 1),
                                    R"("minLength": )" + std::to_string(shortest.size() + 1)}) {
      try {
        (void)schema(R"({"format": ")" + name + R"(", )" + bound + "}");
        ADD_FAILURE() << name << " " << bound;
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("minLength / maxLength that leave out some lengths of the format"), std::string::npos)
            << e.what();
      }
    }
  }
  const JsonSchema stamp = schema(R"({"type": ["string", "null"], "format": "date-time"})");
  EXPECT_TRUE(matches(stamp, "\"2024-02-29T23:59:59.999Z\"") && matches(stamp, "null"));
  EXPECT_FALSE(matches(stamp, "\"2024-02-29 23:59:59Z\"") || matches(stamp, "\"2024-02-29\""));
  const JsonSchema uuid = schema(R"({"format": "uuid"})");  // strings only; other types as they are
  EXPECT_TRUE(matches(uuid, "\"123e4567-e89b-12d3-A456-426614174000\"") && matches(uuid, "42"));
  EXPECT_FALSE(matches(uuid, "\"123e4567e89b12d3a456426614174000\"") || matches(uuid, "\"123e4567-e89b-12d3-a456-42661417400g\""));
  EXPECT_FALSE(prefix(uuid, "\"123e4567-e89b-12d3-a456-4266141740000"));
  EXPECT_FALSE(prefix(uuid, "\"\\u0031"));  // no escapes in a formatted string
  EXPECT_TRUE(matches(schema(R"({"type": "string", "format": "iri"})"), "\"anything\""));  // not enforced

  // Random walks: never a dead end, every completed date is a real calendar day (checked here
  // by its own leap-year rule) and every date-time has its parts.
  std::uint32_t rng = 99;
  for (const char* text : {R"({"type": "string", "format": "date"})", R"({"type": "string", "format": "date-time"})",
                           R"({"type": "string", "format": "uuid"})"}) {
    const JsonSchema sc = schema(text);
    for (int walk = 0; walk < 400; ++walk) {
      bool dead_end = false;
      const std::string out = random_value(sc, rng, 0, &dead_end);
      ASSERT_FALSE(dead_end) << text << ": dead end after " << out;
      const std::string v = nlohmann::json::parse(out).get<std::string>();
      if (std::string(text).find("uuid") != std::string::npos) {
        EXPECT_EQ(v.size(), 36u) << v;
        continue;
      }
      const int y = std::stoi(v.substr(0, 4)), mo = std::stoi(v.substr(5, 2)), d = std::stoi(v.substr(8, 2));
      const bool leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
      const int dim[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
      EXPECT_TRUE(y >= 1 && mo >= 1 && mo <= 12 && d >= 1 && d <= dim[mo - 1]) << v;
      if (v.size() > 10) {
        EXPECT_EQ(v[10], 'T') << v;
        EXPECT_LE(std::stoi(v.substr(11, 2)), 23) << v;
        EXPECT_TRUE(v.back() == 'Z' || v[v.size() - 3] == ':') << v;
      }
    }
  }
}

// A DNS label as RFC 1123 writes it: 1-63 letters, digits and inner hyphens.
bool dns_label(const std::string& l) {
  if (l.empty() || l.size() > 63 || l.front() == '-' || l.back() == '-') return false;
  for (char c : l) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
  }
  return true;
}

std::vector<std::string> split(const std::string& s, char at) {
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == at) {
      parts.emplace_back();
    } else {
      parts.back().push_back(c);
    }
  }
  return parts;
}

// Each format read by its own rules, written here apart from the patterns (glibc's inet_pton
// for the addresses). jsonschema's format checker holds email, ipv4, ipv6 and uri too, in the
// reference corpus (tools/json_schema_reference.py).
bool valid_format(const std::string& format, const std::string& v) {
  unsigned char address[16];
  if (format == "ipv4") return inet_pton(AF_INET, v.c_str(), address) == 1;
  if (format == "ipv6") return inet_pton(AF_INET6, v.c_str(), address) == 1 && v.find('.') == std::string::npos;
  if (format == "hostname") {
    if (v.size() > 253) return false;
    for (const std::string& l : split(v, '.')) {
      if (!dns_label(l)) return false;
    }
    return true;
  }
  if (format == "email") {
    const std::vector<std::string> at = split(v, '@');
    if (at.size() != 2 || at[0].empty() || at[0].size() > 64 || v.size() > 254) return false;
    for (const std::string& atom : split(at[0], '.')) {
      if (atom.empty() || atom.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+/=?^_`{|}~-") !=
                              std::string::npos) {
        return false;
      }
    }
    const std::vector<std::string> labels = split(at[1], '.');
    if (labels.size() < 2) return false;
    for (const std::string& l : labels) {
      if (!dns_label(l)) return false;
    }
    const std::string& top = labels.back();
    return std::all_of(top.begin(), top.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  }
  if (format == "uri") {
    const std::size_t colon = v.find("://");
    if (colon == std::string::npos || colon == 0 || !std::isalpha(static_cast<unsigned char>(v[0]))) return false;
    if (v.substr(0, colon).find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-") != std::string::npos) {
      return false;
    }
    const std::string rest = v.substr(colon + 3);
    const std::size_t end = rest.find_first_of("/?#");
    const std::string authority = rest.substr(0, end);
    const std::size_t port = authority.find(':');
    for (const std::string& l : split(authority.substr(0, port), '.')) {
      if (!dns_label(l)) return false;
    }
    if (port != std::string::npos) {
      const std::string p = authority.substr(port + 1);
      if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos || (p.size() > 1 && p[0] == '0') ||
          std::stol(p) > 65535) {
        return false;
      }
    }
    const std::string tail = end == std::string::npos ? "" : rest.substr(end);
    if (std::count(tail.begin(), tail.end(), '#') > 1) return false;
    for (std::size_t i = 0; i < tail.size(); ++i) {
      const char c = tail[i];
      if (c == '%') {
        if (i + 2 >= tail.size() || !std::isxdigit(static_cast<unsigned char>(tail[i + 1])) ||
            !std::isxdigit(static_cast<unsigned char>(tail[i + 2]))) {
          return false;
        }
      } else if (!std::isalnum(static_cast<unsigned char>(c)) && std::string("-._~!$&'()*+,;=:@/?#").find(c) == std::string::npos) {
        return false;
      }
    }
    return true;
  }
  if (format == "duration") {
    // RFC 3339 appendix A: P, then date units Y M D in order (a run: Y[M[D]], M[D] or D) and
    // T with H M S (H[M[S]], M[S] or S), or weeks alone; each unit after digits.
    if (v.size() < 3 || v[0] != 'P') return false;
    std::string units;
    std::size_t i = 1;
    while (i < v.size()) {
      if (v[i] == 'T') {
        units.push_back('T');
        ++i;
        continue;
      }
      const std::size_t digits = v.find_first_not_of("0123456789", i);
      if (digits == i || digits == std::string::npos) return false;
      units.push_back(v[digits]);
      i = digits + 1;
    }
    const std::string date = units.substr(0, units.find('T'));
    const std::string time = units.find('T') == std::string::npos ? "" : units.substr(units.find('T'));
    if (date == "W") return time.empty();
    for (const char* ok : {"", "Y", "YM", "YMD", "M", "MD", "D"}) {
      if (date != ok) continue;
      for (const char* t : {"", "TH", "THM", "THMS", "TM", "TMS", "TS"}) {
        if (time == t) return !(date.empty() && time.empty());
      }
    }
    return false;
  }
  return false;
}

// "format": email, hostname, ipv4, ipv6, uri and duration are enforced as patterns of their own
// (format_pattern): every value generated is valid, the common ones can be written, and the
// longest hostnames and emails stop at their limits.
TEST(JsonMatcher, PatternFormatsGenerateValidValues) {
  const std::vector<std::tuple<std::string, std::vector<std::string>, std::vector<std::string>>> cases = {
      {"ipv4", {"192.168.0.1", "0.0.0.0", "255.255.255.255", "10.20.30.40"}, {"256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3"}},
      {"ipv6",
       {"::1", "::", "2001:db8::8a2e:370:7334", "fe80::1", "2001:0db8:85a3:0000:0000:8a2e:0370:7334", "1::", "ABCD:ef01::2"},
       {"1::2::3", "12345::", "1:2:3:4:5:6:7:8:9", ":1", "1:2:3:4:5:6:7", "g::1"}},
      {"email",
       {"john.doe@example.com", "a@b.co", "x+tag@mail.example.org", "o'neil@sub-domain.example.io"},
       {"a@b", "a..b@c.com", ".a@b.co", "a@-b.com", "a@b.c1", "@b.com", "a@@b.com", "a b@c.com"}},
      {"hostname", {"example.com", "localhost", "a-b.c", "xn--bcher-kva.example"}, {"-a.com", "a-.com", "a..b", "a_b.com", ".a", "a."}},
      {"uri",
       {"https://example.com/a/b?x=1&y=%20#frag", "http://localhost:8080/", "ftp://files.example.org", "s3://bucket/key/a+b"},
       {"example.com", "http://", "http://a b", "http://x:99999", "http://x/%g0", "http://x#a#b", "1http://x"}},
      {"duration", {"P1Y2M3DT4H5M6S", "P3W", "PT0S", "P1D", "P10Y", "PT36H", "P1MT1M"}, {"P", "PT", "P1H", "P1S", "1D", "P1W2D", "PT1H1S", "P1D2M"}},
  };
  std::uint32_t rng = 7;
  for (const auto& [name, good, bad] : cases) {
    const JsonSchema f = schema(R"({"type": "string", "format": ")" + name + "\"}");
    for (const std::string& v : good) {
      EXPECT_TRUE(valid_format(name, v)) << name << " " << v;  // the examples are right
      EXPECT_TRUE(matches(f, "\"" + v + "\"")) << name << " " << v;
    }
    for (const std::string& v : bad) {
      EXPECT_FALSE(valid_format(name, v)) << name << " " << v;
      EXPECT_FALSE(matches(f, "\"" + v + "\"")) << name << " " << v;
    }
    for (int walk = 0; walk < 150; ++walk) {
      bool dead_end = false;
      const std::string out = random_value(f, rng, 3, &dead_end);
      ASSERT_FALSE(dead_end) << name << ": dead end after " << out;
      const std::string v = nlohmann::json::parse(out).get<std::string>();
      EXPECT_TRUE(valid_format(name, v)) << name << " " << v;
    }
  }
  // The limits: a 63-character label, not 64; a hostname of 253 characters, not 254.
  const JsonSchema host = schema(R"({"type": "string", "format": "hostname"})");
  const std::string label63(63, 'a');
  EXPECT_TRUE(matches(host, "\"" + label63 + "\""));
  EXPECT_FALSE(prefix(host, "\"" + label63 + "a"));
  const std::string name253 = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'b');
  EXPECT_TRUE(matches(host, "\"" + name253 + "\""));
  EXPECT_FALSE(prefix(host, "\"" + name253 + "b"));
  EXPECT_FALSE(prefix(host, "\"" + name253.substr(0, 252) + "."));  // a label begun with no room to end
  const JsonSchema email = schema(R"({"type": "string", "format": "email"})");
  EXPECT_FALSE(prefix(email, "\"" + std::string(33, 'a')));  // a local part's first atom holds 32
  // Tighter bounds than the format's own hold as they would with a pattern; a pattern beside one
  // of these formats is refused by place.
  const JsonSchema short_ip = schema(R"({"type": "string", "format": "ipv4", "maxLength": 8})");
  EXPECT_TRUE(matches(short_ip, "\"10.0.0.1\"") && !prefix(short_ip, "\"10.0.0.10"));
  EXPECT_TRUE(prefix(short_ip, "\"10.1"));
  EXPECT_FALSE(prefix(short_ip, "\"100.1"));  // three more octets need at least 5 characters
  EXPECT_NE(refusal(R"({"properties": {"ip": {"format": "ipv4", "pattern": "^10\\."}}})").find("at /properties/ip: a pattern next to \"format\": \"ipv4\""),
            std::string::npos);
  EXPECT_NE(refusal(R"({"format": "email", "maxLength": 4})").find("no string between minLength and maxLength matches"), std::string::npos);
  // Inside a $ref and with null beside it, as pydantic writes Optional[IPv4Address].
  const JsonSchema optional = schema(R"({"$defs": {"ip": {"type": "string", "format": "ipv4"}},
                                          "anyOf": [{"$ref": "#/$defs/ip"}, {"type": "null"}]})");
  EXPECT_TRUE(matches(optional, "\"1.2.3.4\"") && matches(optional, "null") && !matches(optional, "\"1.2.3\""));
}

// "pattern" (json_pattern.h) on the string's characters, escapes and UTF-8 decoded.
TEST(JsonMatcher, PatternHoldsOnDecodedStrings) {
  const JsonSchema code = schema(R"({"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"})");
  EXPECT_TRUE(matches(code, "\"ABC-1234\""));
  EXPECT_FALSE(matches(code, "\"ABC-123\""));
  EXPECT_TRUE(prefix(code, "\"ABC-123"));
  EXPECT_FALSE(prefix(code, "\"AbC"));
  EXPECT_FALSE(prefix(code, "\"ABC-12345"));
  // Escapes are the characters they stand for; \u escapes are not written in patterned strings.
  const JsonSchema lines = schema(R"({"pattern": "^a\\n\"b\\\\$"})");
  EXPECT_TRUE(matches(lines, R"("a\n\"b\\")"));
  EXPECT_FALSE(matches(lines, R"("a\t\"b\\")"));
  EXPECT_FALSE(prefix(lines, R"("\u0061)"));
  // So a control character other than \b \t \n \f \r is never due (found by the fuzz target:
  // "\0{3}" left no byte to write after "AB-").
  const JsonSchema controls = schema(R"({"pattern": "^a[\\x00-\\x1f]?\\x01?b$", "maxLength": 4})");
  EXPECT_TRUE(matches(controls, R"("ab")"));
  EXPECT_TRUE(matches(controls, R"("a\nb")"));
  EXPECT_FALSE(prefix(controls, R"("a\u)"));
  EXPECT_FALSE(prefix(controls, R"("a\n\)"));
  // UTF-8 characters as code points; minLength / maxLength as well.
  const JsonSchema accents = schema(R"({"pattern": "^\u00e9+.$", "maxLength": 3})");
  EXPECT_TRUE(matches(accents, "\"\xC3\xA9\xE2\x82\xAC\""));
  EXPECT_TRUE(matches(accents, "\"\xC3\xA9\xC3\xA9x\""));
  EXPECT_FALSE(prefix(accents, "\"\xC3\xA9\xC3\xA9\xC3\xA9x"));
  EXPECT_FALSE(prefix(accents, "\"e"));
  // Unanchored: anywhere in the string; other types are not strings and pass.
  const JsonSchema cat = schema(R"({"type": ["string", "integer"], "pattern": "cat"})");
  EXPECT_TRUE(matches(cat, "\"concatenate\""));
  EXPECT_FALSE(matches(cat, "\"dog\""));
  EXPECT_TRUE(matches(cat, "12"));
  // Keys are not the pattern's; a property's string is.
  const JsonSchema obj = schema(
      R"({"type": "object", "properties": {"zip": {"type": "string", "pattern": "^\\d{5}$"}}, "additionalProperties": false})");
  EXPECT_TRUE(matches(obj, R"({"zip": "12345"})"));
  EXPECT_FALSE(matches(obj, R"({"zip": "1234"})"));
  EXPECT_FALSE(prefix(obj, R"({"zip": "1234a)"));
  // An enum keeps the strings the pattern matches.
  const JsonSchema e = schema(R"({"enum": ["ab", "cd", 3], "pattern": "^a"})");
  EXPECT_TRUE(matches(e, "\"ab\""));
  EXPECT_FALSE(matches(e, "\"cd\""));
  EXPECT_TRUE(matches(e, "3"));
  // anyOf: the string branch keeps its pattern.
  const JsonSchema opt = schema(R"({"anyOf": [{"type": "string", "pattern": "^x+$"}, {"type": "null"}]})");
  EXPECT_TRUE(matches(opt, "\"xx\""));
  EXPECT_TRUE(matches(opt, "null"));
  EXPECT_FALSE(prefix(opt, "\"xy"));
}

// A pattern whose matches skip lengths: minLength / maxLength are held to the lengths the
// pattern can reach from where the string stands, so no string is begun or continued that only
// a length outside them would finish (no dead end), and a schema with no such length is
// refused (found by the fuzz target: a pattern from a $ref and lengths next to it).
TEST(JsonMatcher, PatternLengthGapsLeaveNoDeadEnd) {
  const JsonSchema alternatives = schema(R"({"type": "string", "pattern": "^(ab|abcd|abcdefg)$", "minLength": 3, "maxLength": 5})");
  EXPECT_TRUE(matches(alternatives, "\"abcd\""));
  EXPECT_FALSE(matches(alternatives, "\"ab\""));
  EXPECT_TRUE(prefix(alternatives, "\"ab"));  // on its way to abcd
  EXPECT_FALSE(prefix(alternatives, "\"ab\""));
  EXPECT_FALSE(prefix(alternatives, "\"abcde"));
  const JsonSchema pairs = schema(R"({"type": "string", "pattern": "^(xy)+$", "minLength": 3, "maxLength": 5})");
  EXPECT_TRUE(matches(pairs, "\"xyxy\""));
  EXPECT_FALSE(prefix(pairs, "\"xyxyx"));  // only xyxyxy would finish it
  EXPECT_FALSE(matches(pairs, "\"xy\""));
  std::uint32_t rng = 7;
  for (const JsonSchema* s : {&alternatives, &pairs}) {
    for (int i = 0; i < 200; ++i) {
      bool dead_end = false;
      const std::string v = random_value(*s, rng, 0, &dead_end);
      EXPECT_FALSE(dead_end) << v;
      const std::size_t b = v.find('"'), e = v.rfind('"');  // whitespace may come around the value
      ASSERT_NE(b, e) << v;
      EXPECT_EQ(v.substr(b, e + 1 - b), s == &alternatives ? "\"abcd\"" : "\"xyxy\"") << v;
    }
  }
  // Lengths across 64-bit words of the measured bits: 1, 70 or 130 characters, 2 to 129 allowed.
  const JsonSchema long_ones = schema(R"({"pattern": "^(a|b{70}|c{130})$", "minLength": 2, "maxLength": 129})");
  EXPECT_TRUE(matches(long_ones, "\"" + std::string(70, 'b') + "\""));
  EXPECT_FALSE(prefix(long_ones, "\"c"));
  EXPECT_FALSE(prefix(long_ones, "\"a\""));
  for (const char* text : {R"({"pattern": "^(a|b{130})$", "minLength": 2, "maxLength": 129})",
                           R"({"type": "string", "pattern": "^(ab|abcdef)$", "minLength": 3, "maxLength": 5})",
                           R"({"pattern": "^(xy)+$", "minLength": 5, "maxLength": 5})",
                           R"({"$defs": {"N": {"type": "string", "pattern": "^[A-Z]bbbbbb"}}, "$ref": "#/$defs/N", "maxLength": 4})"}) {
    try {
      (void)schema(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no string between minLength and maxLength matches the pattern"), std::string::npos) << e.what();
    }
  }
}

// Keys are taken only while maxProperties leaves room for the required properties still
// missing, and a listed property is never given twice (not even as "another key"); objects no
// value can be are refused. Found by random walks of the matcher checked with Python's
// jsonschema: `{"b":2` left no byte to write when "c" was required and maxProperties 1.
TEST(JsonMatcher, ObjectKeysLeaveRoomForRequiredProperties) {
  const JsonSchema closed = schema(R"({"type": "object", "properties": {"b": {"type": "integer"}, "c": {"enum": [2.5]}},
                                      "required": ["c"], "additionalProperties": false, "maxProperties": 1})");
  EXPECT_FALSE(prefix(closed, R"({"b)"));
  EXPECT_TRUE(matches(closed, R"({"c": 2.5})"));
  const JsonSchema open = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "null"}},
                                    "required": ["c"], "maxProperties": 2})");
  EXPECT_TRUE(matches(open, R"({"x": 1, "c": null})"));
  EXPECT_FALSE(prefix(open, R"({"x": 1, "y)"));  // c would not fit
  EXPECT_FALSE(prefix(open, R"({"a": 1, "ab)"));  // another key would leave no room for c
  EXPECT_TRUE(matches(open, R"({"a": 1, "c": null})"));
  const JsonSchema roomy = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_FALSE(prefix(roomy, R"({"a": 1, "a")"));  // a given twice, even as another key
  EXPECT_TRUE(matches(roomy, R"({"a": 1, "ab": "x"})"));
  std::uint32_t rng = 11;
  for (const JsonSchema* s : {&closed, &open, &roomy}) {
    for (int i = 0; i < 300; ++i) {
      bool dead_end = false;
      const std::string v = random_value(*s, rng, 3, &dead_end);
      EXPECT_FALSE(dead_end) << v;
    }
  }
  for (const auto& [text, message] : std::vector<std::pair<const char*, const char*>>{
           {R"({"properties": {"a": {}, "b": {}}, "required": ["a", "b"], "maxProperties": 1})", "2 required properties and maxProperties 1"},
           {R"({"properties": {"a": {}}, "additionalProperties": false, "minProperties": 2})", "minProperties 2 with 1 properties that may be given and no other keys allowed"}}) {
    try {
      (void)schema(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// Keywords beside anyOf / oneOf hold in every branch, and the other parts of an allOf hold in
// every branch of an anyOf part whose branches overlap: both distributed over the branches
// (llama.cpp's "anyOf" and tsconfig-like "mix of allOf, anyOf and $ref" cases; the "at least one
// of a, b" object). Branches no value can be are left out.
TEST(JsonMatcher, KeywordsBesideAnyOfHoldInEveryBranch) {
  const JsonSchema one_of_ab = schema(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                                          "anyOf": [{"required": ["a"]}, {"required": ["b"]}], "additionalProperties": false})");
  EXPECT_TRUE(matches(one_of_ab, R"({"a": 1})") && matches(one_of_ab, R"({"b": "x"})") && matches(one_of_ab, R"({"a": 1, "b": "x"})"));
  EXPECT_TRUE(prefix(one_of_ab, "{") && !matches(one_of_ab, "{}"));
  EXPECT_FALSE(prefix(one_of_ab, R"({"c)") || prefix(one_of_ab, R"({"a": ")") || prefix(one_of_ab, "1"));
  std::uint32_t rng = 5;
  for (int i = 0; i < 200; ++i) {
    bool dead_end = false;
    const std::string v = random_value(one_of_ab, rng, 3, &dead_end);
    ASSERT_FALSE(dead_end) << v;
    const nlohmann::json j = nlohmann::json::parse(v);
    EXPECT_TRUE(j.is_object() && (j.contains("a") || j.contains("b"))) << v;
    for (const auto& [k, x] : j.items()) EXPECT_TRUE((k == "a" && x.is_number_integer()) || (k == "b" && x.is_string())) << v;
  }
  const std::string defs = R"("definitions": {"foo": {"properties": {"a": {"type": "number"}}}, "bar": {"properties": {"b": {"type": "number"}}},
                                              "baz": {"properties": {"c": {"type": "number"}}, "required": ["c"]},
                                              "bam": {"properties": {"d": {"type": "number"}}, "required": ["d"]}})";
  const JsonSchema typed = schema(R"({"anyOf": [{"$ref": "#/definitions/foo"}, {"$ref": "#/definitions/bar"}], "type": "object", )" + defs + "}");
  EXPECT_TRUE(matches(typed, R"({"a": 1.5})") && matches(typed, R"({"b": 2, "z": null})"));
  EXPECT_FALSE(prefix(typed, "1") || prefix(typed, "\"") || prefix(typed, "["));
  EXPECT_TRUE(matches(typed, R"({"a": "x"})"));  // bar's reading: a is another key there
  const JsonSchema mix = schema(R"({"allOf": [{"$ref": "#/definitions/foo"}, {"$ref": "#/definitions/bar"},
                                              {"anyOf": [{"$ref": "#/definitions/baz"}, {"$ref": "#/definitions/bam"}]}], "type": "object", )" + defs + "}");
  EXPECT_TRUE(matches(mix, R"({"c": 1})") && matches(mix, R"({"a": 0, "d": 2})") && matches(mix, R"({"c": 1, "d": 2})"));
  EXPECT_FALSE(matches(mix, "{}") || matches(mix, R"({"a": 1})") || prefix(mix, R"({"a": "x)") || matches(mix, R"({"c": true})"));
  EXPECT_TRUE(matches(mix, R"({"c": true, "d": 0})"));  // bam's reading: c is another key there
  // A branch that cannot meet the keywords beside it is left out.
  const JsonSchema lower = schema(R"({"allOf": [{"type": "string"}, {"anyOf": [{"type": "string", "pattern": "^[a-z]*$"}, {"enum": [1]}]}]})");
  EXPECT_TRUE(matches(lower, "\"abc\""));
  EXPECT_FALSE(matches(lower, "1") || matches(lower, "\"aBc\""));
  const JsonSchema told_apart = schema(R"({"type": ["string", "integer"], "oneOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]})");
  EXPECT_TRUE(matches(told_apart, "\"x\"") && matches(told_apart, "5"));
  EXPECT_FALSE(matches(told_apart, "-1") || prefix(told_apart, "n") || prefix(told_apart, "["));
  // allOf of 8 anyOfs of 10 overlapping branches each would be 10^8 branches once distributed:
  // refused at the bound, not built.
  nlohmann::json many = {{"allOf", nlohmann::json::array()}};
  for (int k = 0; k < 8; ++k) {
    nlohmann::json any = nlohmann::json::array();
    for (int b = 0; b < 10; ++b) any.push_back({{"type", "object"}, {"required", {"p" + std::to_string(k) + std::to_string(b)}}});
    many["allOf"].push_back({{"anyOf", any}});
  }
  EXPECT_NE(refusal(many.dump()).find("makes more than 4096 branches"), std::string::npos) << refusal(many.dump());
  EXPECT_NE(refusal(R"({"type": "string", "anyOf": [{"type": "integer"}, {"enum": [null, 2]}]})")
                .find("at /anyOf: no branch allows a value next to the keywords beside anyOf"),
            std::string::npos);
  // A closed model with a part that requires some of its properties (allOf of a $ref and
  // {"required": [...]}): the property keeps the model's schema; a required name the model
  // does not list is refused.
  const std::string model = R"("$defs": {"m": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "additionalProperties": false}})";
  const JsonSchema required_a = schema(R"({"allOf": [{"$ref": "#/$defs/m"}, {"required": ["a"]}], )" + model + "}");
  EXPECT_TRUE(matches(required_a, R"({"a": 1})") && matches(required_a, R"({"b": [], "a": 2})"));
  EXPECT_FALSE(matches(required_a, "{}") || matches(required_a, R"({"b": 1})") || prefix(required_a, R"({"c)") ||
               prefix(required_a, R"({"a": "x)"));
  EXPECT_NE(refusal(R"({"allOf": [{"$ref": "#/$defs/m"}, {"required": ["z"]}], )" + model + "}").find("lists property z, which this one does not"),
            std::string::npos);
}

// "$ref" read against the base URI "$id" gives (RFC 3986): a resource's own "$id", absolute or
// relative, a JSON pointer or an anchor from that resource's root, URNs; other documents are
// refused by place.
TEST(JsonMatcher, ReferencesByIdStayInTheDocument) {
  for (const char* text : {R"({"$id": "https://ex.com/s/root.json", "$defs": {"a": {"type": "integer"}}, "$ref": "https://ex.com/s/root.json#/$defs/a"})",
                           R"({"$id": "https://ex.com/s/root.json", "$defs": {"a": {"type": "integer"}}, "$ref": "root.json#/$defs/a"})",
                           R"({"$id": "https://ex.com/s/root.json", "$defs": {"a": {"$id": "a.json", "type": "integer"}}, "$ref": "a.json"})",
                           R"({"$id": "https://ex.com/s/root.json", "$defs": {"a": {"$id": "/other/a.json", "type": "integer"}}, "$ref": "https://ex.com/other/a.json"})",
                           R"({"$defs": {"a": {"$id": "urn:example:a", "type": "integer"}}, "$ref": "urn:example:a"})",
                           R"({"$defs": {"a": {"$id": "a.json", "type": "integer"}}, "$ref": "./a.json"})",
                           R"({"$id": "https://ex.com/r.json", "$defs": {"a": {"$anchor": "num", "type": "integer"}}, "$ref": "#num"})"}) {
    const JsonSchema s = schema(text);
    EXPECT_TRUE(matches(s, "12")) << text;
    EXPECT_FALSE(prefix(s, "\"") || prefix(s, "1.")) << text;
  }
  // Inside a resource, "#/..." starts at that resource's root, not the document's.
  const JsonSchema inner = schema(R"({"$defs": {"inner": {"$id": "http://e.com/inner.json", "$defs": {"t": {"type": "boolean"}}, "$ref": "#/$defs/t"},
                                                "t": {"type": "integer"}}, "$ref": "http://e.com/inner.json"})");
  EXPECT_TRUE(matches(inner, "true"));
  EXPECT_FALSE(prefix(inner, "1"));
  // A nested resource's relative "$id" is read against the one around it.
  const JsonSchema nested = schema(R"({"$defs": {"x": {"$id": "http://e.com/x/", "$defs": {"y": {"$id": "y.json", "type": "null"}}}},
                                       "$ref": "http://e.com/x/y.json"})");
  EXPECT_TRUE(matches(nested, "null"));
  EXPECT_FALSE(prefix(nested, "1"));
  EXPECT_NE(refusal(R"({"$ref": "https://json-schema.org/draft/2020-12/schema"})")
                .find("at /$ref: 'https://json-schema.org/draft/2020-12/schema': no schema in this document has the $id"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"$id": "https://ex.com/s/root.json", "$defs": {"a": {"$id": "a.json"}}, "$ref": "b.json"})")
                .find("no schema in this document has the $id https://ex.com/s/b.json"),
            std::string::npos);
  // Values are not schemas: an "$id" inside an enum names nothing.
  EXPECT_NE(refusal(R"({"enum": [{"$id": "v.json"}], "properties": {"p": {"$ref": "v.json"}}})").find("no schema in this document has the $id v.json"),
            std::string::npos);
  // llama.cpp reads an object given as prefixItems as the items' schema; so does this, where
  // items allows anything.
  const JsonSchema words = schema(R"({"type": "array", "items": {}, "prefixItems": {"type": "string"}})");
  EXPECT_TRUE(matches(words, R"(["a", "b"])"));
  EXPECT_FALSE(prefix(words, "[1"));
  EXPECT_NE(refusal(R"({"items": {"type": "integer"}, "prefixItems": {"type": "string"}})").find("at /prefixItems: expected an array of schemas"),
            std::string::npos);
}

// patternProperties (one pattern) and a propertyNames pattern: a key no property lists takes the
// pattern's schema where the pattern matches it, else additionalProperties'; where other keys
// must match (additionalProperties false, propertyNames), a key goes on only while a match can
// follow, and a pattern whose keys could run out is refused.
TEST(JsonMatcher, KeyPatternsChooseTheSchemaOfOtherKeys) {
  const JsonSchema ext = schema(R"({"type": "object", "properties": {"name": {"type": "string"}},
                                    "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": false})");
  EXPECT_TRUE(matches(ext, R"({"name": "a", "x-rate": 5, "x-": -1})"));
  EXPECT_FALSE(prefix(ext, R"({"x-rate": ")") || prefix(ext, R"({"y)") || prefix(ext, R"({"xy)") || prefix(ext, R"({"nam")"));
  EXPECT_FALSE(prefix(ext, R"({"x-a": 1, "x-a")"));  // given twice
  EXPECT_FALSE(prefix(ext, R"({"x\u)"));             // a key with a \u escape matches no pattern
  const JsonSchema mixed = schema(R"({"type": "object", "patternProperties": {"^S_": {"type": "string"}},
                                      "additionalProperties": {"type": "boolean"}})");
  EXPECT_TRUE(matches(mixed, R"({"S_a": "x", "b": true, "S": false, "é": true})"));
  EXPECT_FALSE(prefix(mixed, R"({"S_a": t)") || prefix(mixed, R"({"b": ")"));
  const JsonSchema named = schema(R"({"type": "object", "properties": {"Ab": {}, "ab": {}},
                                      "propertyNames": {"pattern": "^[A-Z][a-z]+$"}, "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(matches(named, R"({"Ab": null, "Xyz": 3})"));
  EXPECT_NE(refusal(R"({"properties": {"ab": {}}, "required": ["ab"], "propertyNames": {"pattern": "^[A-Z]"}})").find("'ab' is required, but its schema is false"),
            std::string::npos);
  EXPECT_FALSE(prefix(named, R"({"Ab": 1, "ab)") || prefix(named, R"({"Ab": 1, "X")") || prefix(named, R"({"Ab": 1, "Xy": "s)"));
  // Required names the pattern matches take its schema; one neither listed nor matched is refused.
  const JsonSchema required_ext = schema(R"({"patternProperties": {"^x-": {"type": "null"}}, "additionalProperties": false, "required": ["x-id"]})");
  EXPECT_TRUE(matches(required_ext, R"({"x-id": null})"));
  EXPECT_FALSE(matches(required_ext, "{}") || prefix(required_ext, R"({"x-id": 1)"));
  EXPECT_NE(refusal(R"({"patternProperties": {"^x-": {}}, "additionalProperties": false, "required": ["id"]})").find("'id' is required"),
            std::string::npos);
  std::uint32_t rng = 21;
  for (const JsonSchema* sc : {&ext, &mixed, &named}) {  // (a walk would seldom write "x-id" itself)
    for (int i = 0; i < 100; ++i) {
      bool dead_end = false;
      const std::string v = random_value(*sc, rng, 3, &dead_end);
      ASSERT_FALSE(dead_end) << v;
      const nlohmann::json j = nlohmann::json::parse(v);
      for (const auto& [k, x] : j.items()) {
        if (sc == &ext) {
          EXPECT_TRUE((k == "name" && x.is_string()) || (k.rfind("x-", 0) == 0 && x.is_number_integer())) << v;
        }
        if (sc == &mixed) {
          EXPECT_TRUE(k.rfind("S_", 0) == 0 ? x.is_string() : x.is_boolean()) << v;
        }
        if (sc == &named) {
          EXPECT_TRUE(k.size() >= 2 && std::isupper(static_cast<unsigned char>(k[0])) &&
                      std::all_of(k.begin() + 1, k.end(), [](char c) { return c >= 'a' && c <= 'z'; }))
              << v;
          if (k != "Ab") {
            EXPECT_TRUE(x.is_number_integer()) << v;
          }
        }
      }
    }
  }
  for (const auto& [text, message] : std::vector<std::pair<const char*, const char*>>{
           {R"({"patternProperties": {"^a": {}, "^b": {}}})", "json_schema at /patternProperties: more than one pattern"},
           {R"({"patternProperties": {"^[a-z]+_id$": {}}, "additionalProperties": false})",
            "json_schema at /patternProperties: a pattern with finitely many keys from some place on"},
           {R"({"properties": {"ab": {"type": "string"}}, "patternProperties": {"^a": {"type": "integer"}}})",
            "json_schema at /patternProperties: property ab is listed and matches the pattern"},
           {R"({"patternProperties": {"^a": false}})", "json_schema at /patternProperties: a pattern whose schema is false"},
           {R"({"allOf": [{"patternProperties": {"^a": {}}}, {"required": ["b"]}]})",
            "json_schema at /allOf/0: patternProperties or a propertyNames pattern next to other schemas"}}) {
    EXPECT_EQ(refusal(text).rfind(message, 0), 0u) << refusal(text);
  }
  // Where other keys are allowed too, a pattern fixed at its end is fine: a key can always go on
  // as one it does not match.
  const JsonSchema ids = schema(R"({"patternProperties": {"^[a-z]+_id$": {"type": "integer"}}})");
  EXPECT_TRUE(matches(ids, R"({"user_id": 3, "user_name": "x"})"));
  EXPECT_FALSE(prefix(ids, R"({"user_id": "x)"));
}

// allOf: one node that holds every branch (pydantic v1 writes a described field as allOf of one
// $ref; a model extended by another is two object branches).
TEST(JsonMatcher, AllOfHoldsEveryBranch) {
  const JsonSchema pydantic = schema(R"({"definitions": {"Pet": {"type": "object", "properties": {"name": {"type": "string"}},
      "required": ["name"]}}, "type": "object", "properties": {"pet": {"title": "Pet", "description": "the pet",
      "allOf": [{"$ref": "#/definitions/Pet"}]}}, "required": ["pet"]})");
  EXPECT_TRUE(matches(pydantic, R"({"pet": {"name": "x"}})"));
  EXPECT_FALSE(matches(pydantic, R"({"pet": {}})"));
  EXPECT_FALSE(prefix(pydantic, R"({"pet": 3)"));
  const JsonSchema both = schema(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
      {"properties": {"b": {"type": "string", "maxLength": 2}}, "required": ["b"]}], "maxProperties": 2})");
  EXPECT_TRUE(matches(both, R"({"a": 1, "b": "xy"})"));
  EXPECT_TRUE(matches(both, R"({"b": "", "a": -4})"));
  EXPECT_FALSE(matches(both, R"({"a": 1})"));
  EXPECT_FALSE(prefix(both, R"({"a": "s")"));
  EXPECT_FALSE(prefix(both, R"({"a": 1, "b": "xyz)"));
  EXPECT_FALSE(prefix(both, R"({"a": 1, "b": "x", "c)"));
  const JsonSchema narrowed = schema(R"({"allOf": [{"type": ["string", "integer"]}, {"type": "string", "minLength": 2}, {"maxLength": 3}]})");
  EXPECT_TRUE(matches(narrowed, "\"ab\""));
  EXPECT_FALSE(matches(narrowed, "\"a\""));
  EXPECT_FALSE(prefix(narrowed, "5"));
  EXPECT_FALSE(prefix(narrowed, "\"abcd"));
  // Keywords next to a $ref hold with it (JSON Schema 2019-09 on), merged the same way.
  const JsonSchema named = schema(R"({"$defs": {"Name": {"type": "string", "pattern": "^[A-Z]"}}, "$ref": "#/$defs/Name",
      "maxLength": 3, "description": "a name"})");
  EXPECT_TRUE(matches(named, "\"Abc\""));
  EXPECT_FALSE(prefix(named, "\"Abcd"));
  EXPECT_FALSE(prefix(named, "\"a"));
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"allOf": [{"pattern": "a"}, {"pattern": "b"}]})", "json_schema at /allOf/1: pattern given by two schemas that must both hold"},
           {R"({"allOf": [{"type": "string"}, {"type": "integer"}]})", "json_schema at /allOf: no value has a type every part allows"},
           {R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]})",
            "json_schema at /allOf/0: additionalProperties next to another schema that must hold too and lists property b"},
           {R"({"allOf": [{"additionalProperties": {"type": "string"}}, {"additionalProperties": false}]})",
            "json_schema at /allOf/1: additionalProperties next to other schemas that must hold too"},
           {R"({"allOf": []})", "json_schema at /allOf: expected a non-empty array"},
           {R"({"$defs": {"N": {"pattern": "a"}}, "$ref": "#/$defs/N", "pattern": "b"})",
            "json_schema at /: pattern given by two schemas that must both hold (allOf, or $ref and its neighbours)"}}) {
    EXPECT_EQ(refusal(text).rfind(message, 0), 0u) << refusal(text);
  }
}

// anyOf whose branches overlap (pydantic's Union of two models): every branch the bytes so far
// fit is followed; a value is taken when one branch takes it whole.
TEST(JsonMatcher, OverlappingAnyOfFollowsEveryBranch) {
  const std::string pets_text = R"({"anyOf": [
      {"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}}, "required": ["kind", "lives"], "additionalProperties": false},
      {"type": "object", "properties": {"kind": {"const": "dog"}, "good": {"type": "boolean"}}, "required": ["kind", "good"], "additionalProperties": false}]})";
  const JsonSchema pets = schema(pets_text);
  EXPECT_TRUE(matches(pets, R"({"kind": "cat", "lives": 9})"));
  EXPECT_TRUE(matches(pets, R"({"kind": "dog", "good": true})"));
  EXPECT_TRUE(prefix(pets, R"({"kind": ")"));
  EXPECT_FALSE(prefix(pets, R"({"kind": "cat", "g)"));
  EXPECT_FALSE(prefix(pets, R"({"kind": "cow)"));
  EXPECT_FALSE(matches(pets, R"({"kind": "dog"})"));
  const JsonSchema list = schema(R"({"type": "array", "items": )" + pets_text + "}");
  EXPECT_TRUE(matches(list, R"([{"kind": "cat", "lives": 1}, {"good": false, "kind": "dog"}])"));
  EXPECT_FALSE(prefix(list, R"([{"kind": "cat", "lives": 1}, {"good": false, "kind": "c)"));
  const JsonSchema numbers = schema(R"({"anyOf": [{"type": "integer", "minimum": 10}, {"type": "number", "maximum": 2}]})");
  EXPECT_TRUE(matches(numbers, "15"));
  EXPECT_TRUE(matches(numbers, "1.5"));
  EXPECT_FALSE(matches(numbers, "5"));
  EXPECT_FALSE(prefix(numbers, "12.5"));
  const JsonSchema strings = schema(R"({"anyOf": [{"type": "string", "pattern": "^a+$"}, {"type": "string", "maxLength": 2}]})");
  EXPECT_TRUE(matches(strings, "\"aaaa\""));
  EXPECT_TRUE(matches(strings, "\"xy\""));
  EXPECT_FALSE(prefix(strings, "\"xyz"));
  EXPECT_FALSE(prefix(strings, "\"aab"));
  // Random walks end in values one branch takes, never in a dead end.
  std::uint32_t rng = 3;
  for (int i = 0; i < 100; ++i) {
    bool dead_end = false;
    const std::string text = random_value(list, rng, 4, &dead_end);
    ASSERT_FALSE(dead_end) << text;
    for (const nlohmann::json& pet : nlohmann::json::parse(text)) {
      EXPECT_TRUE((pet.size() == 2 && pet.value("kind", "") == "cat" && pet.at("lives").is_number_integer()) ||
                  (pet.size() == 2 && pet.value("kind", "") == "dog" && pet.at("good").is_boolean()))
          << text;
    }
  }
}

// pydantic v2's tagged union (Field(discriminator="pet_type")): oneOf of two models told apart
// by a required const property, with OpenAPI's discriminator hint next to it.
TEST(JsonMatcher, OneOfToldApartByADiscriminatorFollowsEveryBranch) {
  const std::string owner_text = R"({"$defs": {
      "Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type", "type": "string"}, "meows": {"title": "Meows", "type": "integer"}},
              "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
      "Dog": {"properties": {"pet_type": {"const": "dog", "title": "Pet Type", "type": "string"}, "barks": {"title": "Barks", "type": "number"}},
              "required": ["pet_type", "barks"], "title": "Dog", "type": "object"}},
    "properties": {"pet": {"discriminator": {"mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}, "propertyName": "pet_type"},
                           "oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}], "title": "Pet"},
                   "n": {"title": "N", "type": "integer"}},
    "required": ["pet", "n"], "title": "Model", "type": "object"})";
  const JsonSchema owner = schema(owner_text);
  EXPECT_TRUE(matches(owner, R"({"pet": {"pet_type": "cat", "meows": 3}, "n": 1})"));
  EXPECT_TRUE(matches(owner, R"({"pet": {"barks": 2.5, "pet_type": "dog"}, "n": 1})"));
  EXPECT_FALSE(matches(owner, R"({"pet": {"pet_type": "dog", "meows": 3}, "n": 1})"));
  EXPECT_FALSE(prefix(owner, R"({"pet": {"pet_type": "cow)"));
  EXPECT_FALSE(prefix(owner, R"({"pet": {"pet_type": "cat", "meows": 1.)"));
  // Told apart by types, by enum values, by a property one branch forbids, or nested.
  const JsonSchema apart = schema(R"({"oneOf": [{"enum": ["a", "b"]}, {"type": "integer"}, {"type": "null"},
      {"type": "object", "properties": {"x": {}}, "required": ["x"]},
      {"type": "object", "properties": {"y": {}}, "additionalProperties": false}]})");
  EXPECT_TRUE(matches(apart, R"("b")"));
  EXPECT_TRUE(matches(apart, "12"));
  EXPECT_TRUE(matches(apart, R"({"x": [1]})"));
  EXPECT_TRUE(matches(apart, R"({"y": 1})"));
  EXPECT_TRUE(matches(apart, "{}"));
  EXPECT_FALSE(prefix(apart, R"("c)"));
  EXPECT_FALSE(matches(apart, R"({"z": 1})"));
  // Random walks, with the models closed (pydantic's extra="forbid"; open ones grow without end).
  std::string closed_text = owner_text;
  const std::string object = R"("type": "object")", no_more = R"(, "additionalProperties": false)";
  for (std::size_t at = 0; (at = closed_text.find(object + "}", at)) != std::string::npos; at += object.size() + no_more.size()) {
    closed_text.insert(at + object.size(), no_more);
  }
  const JsonSchema closed = schema(closed_text);
  EXPECT_FALSE(prefix(closed, R"({"pet": {"pet_type": "cat", "x)"));
  std::uint32_t rng = 11;
  for (int i = 0; i < 100; ++i) {
    bool dead_end = false;
    const std::string text = random_value(closed, rng, 4, &dead_end);
    ASSERT_FALSE(dead_end) << text;
    const nlohmann::json pet = nlohmann::json::parse(text).at("pet");
    const bool cat = pet.size() == 2 && pet.value("pet_type", "") == "cat" && pet.at("meows").is_number_integer();
    const bool dog = pet.size() == 2 && pet.value("pet_type", "") == "dog" && pet.at("barks").is_number();
    EXPECT_TRUE(cat || dog) << text;
  }
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedByPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "string", "not": {"maxLength": 3}})", "json_schema at /not: 'not' is not supported"},
      {R"({"properties": {"id": {"pattern": "(a)\\1"}}})", "json_schema at /properties/id/pattern: backreferences are not supported"},
      {R"({"pattern": "(?=a)b"})", "json_schema at /pattern: lookahead and lookbehind are not supported"},
      {R"({"pattern": "a\\bc"})", "json_schema at /pattern: word boundaries"},
      {R"({"pattern": "a^b"})", "json_schema at /pattern: '^' and '$' are supported only at the start and end"},
      {R"({"pattern": "[a-z]{300}"})", "json_schema at /pattern: the pattern is too large to enforce"},
      {R"j({"pattern": "(a"})j", "json_schema at /pattern: a missing ')'"},
      {R"j({"pattern": "a)"})j", "json_schema at /pattern: unmatched ')'"},
      {R"({"pattern": "[z-a]"})", "json_schema at /pattern: a class range out of order"},
      {R"({"pattern": 5})", "json_schema at /pattern: expected a regular expression"},
      {R"({"pattern": "^\\d{3}$", "maxLength": 2})", "json_schema at /: no string between minLength and maxLength matches the pattern"},
      {R"({"pattern": "^a?$", "minLength": 2})", "json_schema at /: no string between minLength and maxLength matches the pattern"},
      {R"({"pattern": "[]"})", "json_schema at /pattern: the pattern matches no string"},
      // Schemas no finite value satisfies: generation would nest until the depth limit, then stop.
      {R"({"type": "array", "minItems": 1, "items": {"$ref": "#"}})", "json_schema at /: no finite value satisfies this schema"},
      {R"({"properties": {"ok": {"type": "integer"}, "list": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
          "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}, "required": ["next"]}}})",
       "json_schema at /$defs/Node: no finite value satisfies this schema"},
      {R"({"type": "array", "items": false, "minItems": 1})", "json_schema at /: no finite value satisfies this schema"},
      // The fuzz target's dead end: "^da-etg" and a date agree on no first character.
      {R"({"type": "string", "pattern": "^da-etg", "format": "date"})", "json_schema at /: a pattern next to a format the matcher enforces"},
      {R"({"allOf": [{"pattern": "^2000-"}, {"format": "date"}]})", "json_schema at /allOf: a pattern next to a format the matcher enforces"},
      {R"({"type": "string", "pattern": "^[A-Z]{2}-\\0{3}$", "maxLength": 8})",
       "json_schema at /pattern: every string the pattern matches has a control character"},
      {"{\"pattern\": \"" + std::string(100, '(') + std::string(100, ')') + "\"}", "json_schema at /pattern: groups nested more than 64 deep"},
      {R"({"pattern": "((){1000}){1000}"})", "json_schema at /pattern: the pattern is too large to enforce"},
      {R"({"enum": ["ab", "cd"], "pattern": "^x"})", "json_schema at /: no value of the enum / const satisfies the keywords beside it"},
      {R"({"type": "integer", "const": "x"})", "json_schema at /: no value of the enum / const satisfies the keywords beside it"},
      {R"({"enum": [1, 2], "const": 3})", "json_schema at /const: the const is not among the enum's values"},
      {R"({"allOf": [{"enum": [1, 2]}, {"const": 3}]})", "json_schema at /allOf/1: no value of this enum / const is among the other parts' enum / const values"},
      {R"({"type": "string", "minimum": 0})", "json_schema at /: minimum and maximum are enforced with"},
      {R"({"type": "number", "minimum": 1e-7, "maximum": 9e-7})", "json_schema at /: no number of at most 12 digits before the point and 6 after it (what generation writes) lies between the minimum and the maximum"},
      {R"({"type": "number", "minimum": 1e12})", "json_schema at /: no number of at most 12 digits before the point"},
      {R"({"type": "integer", "minimum": 1e18})", "json_schema at /: no integer of at most 18 digits"},
      {R"({"type": "integer", "maximum": -1000000000000000000})", "json_schema at /: no integer of at most 18 digits"},
      {R"({"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 2}]})", "json_schema at /oneOf/1: a value could match this branch and branch 0"},
      {R"({"type": "integer", "minimum": 3, "maximum": 2})", "json_schema at /: no integer of at most 18 digits (what generation writes) lies between the minimum and the maximum"},
      {R"({"type": "strin"})", "json_schema at /type: expected a JSON type name"},
      {R"({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]})", "json_schema at /oneOf/1: a value could match this branch and branch 0"},
      // The tags are required in one branch only: {"kind": "cat"} alone would match both.
      {R"({"oneOf": [{"properties": {"kind": {"const": "cat"}}, "required": ["kind"]}, {"properties": {"kind": {"const": "dog"}}}]})",
       "json_schema at /oneOf/1: a value could match this branch and branch 0"},
      {R"({"oneOf": [{"type": "integer"}, {"type": "number"}]})", "json_schema at /oneOf/1: a value could match this branch and branch 0"},
      {R"({"oneOf": [{"enum": [1, "a"]}, {"enum": [2, 1.0]}]})", "json_schema at /oneOf/1: a value could match this branch and branch 0"},
      {R"({"oneOf": [{"type": "boolean"}, {"enum": ["a", "b", 1]}, {"type": "string", "maxLength": 5}]})",
       "json_schema at /oneOf/2: a value could match this branch and branch 1"},
      {R"({"oneOf": [{"type": "object"}, {"anyOf": [{"type": "string"}, {"type": "object", "required": ["a"], "properties": {"a": {}}}]}]})",
       "json_schema at /oneOf/1: a value could match this branch and branch 0"},
      {R"({"$defs": {"A": {}}, "$ref": "#/$defs/Missing"})", "json_schema at /$ref: '#/$defs/Missing' points at nothing in this schema ('Missing' is not there)"},
      {R"({"$ref": "other.json#/a"})", "json_schema at /$ref: 'other.json#/a': no schema in this document has the $id other.json (other documents are not fetched"},
      {R"({"properties": {"a": false}, "required": ["a"]})", "json_schema at /required: 'a' is required, but its schema is false"},
      {R"({"$ref": "#nowhere", "$defs": {"a": {"$anchor": "here"}}})", "json_schema at /$ref: '#nowhere': no schema here has \"$anchor\": \"nowhere\""},
      {R"({"$defs": {"a": {}}, "$ref": "#/$defs/a~2"})", "json_schema at /$ref: '#/$defs/a~2': '~' in a JSON pointer is followed by 0 or 1"},
      {R"({"allOf": [{"$ref": "#"}, {"type": "object"}]})", "json_schema at /allOf/0: a part that refers back to a schema it is part of, next to other parts"},
      {R"({"properties": {"a": {}}, "required": ["b"], "additionalProperties": false})",
       "json_schema at /required: 'b' is required, but it is not among the properties and no other key of that name is allowed"},
      {"{", "json_schema: not valid JSON"},
      {"[1]", "json_schema at /: expected a schema"},
  };
  for (const auto& [text, message] : cases) {
    try {
      (void)schema(text);
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(message, 0), 0u) << e.what();
    }
  }
  // Annotations are not constraints.
  EXPECT_TRUE(matches(schema(R"({"title": "T", "description": "d", "type": "string", "format": "hostname"})"), "\"x\""));
}


// propertyNames as an enum or const of names (pydantic's Dict[Literal[...], X] and Dict[SomeEnum,
// X]): those names, with additionalProperties' schema, and no other key; listed properties
// outside it are never given. Constraints on keys other than a list of names are refused by place.
TEST(JsonMatcher, PropertyNamesListTheKeysAllowed) {
  const JsonSchema colors = schema(R"({"type": "object", "additionalProperties": {"type": "integer"},
                                        "propertyNames": {"enum": ["red", "green", 3]}})");
  EXPECT_TRUE(matches(colors, R"({"green": 1, "red": 2})"));
  EXPECT_TRUE(matches(colors, "{}"));
  EXPECT_FALSE(prefix(colors, R"({"blue)"));
  EXPECT_FALSE(prefix(colors, R"({"3)"));  // 3 is not a string: no key equals it
  EXPECT_FALSE(prefix(colors, R"({"red": "x)"));
  EXPECT_FALSE(prefix(colors, R"({"red": 1, "red)"));  // given already
  EXPECT_FALSE(prefix(colors, R"({"redd)"));
  // Through a $ref (pydantic's Enum in $defs), with listed properties in and out of the list.
  const JsonSchema defs = schema(R"({"$defs": {"Color": {"enum": ["red", "green"], "type": "string", "title": "Color"}},
                                      "type": "object", "properties": {"red": {"type": "string"}, "blue": {"type": "integer"}},
                                      "propertyNames": {"$ref": "#/$defs/Color"}})");
  EXPECT_TRUE(matches(defs, R"({"red": "x", "green": [1, {"a": null}]})"));  // green: additionalProperties (any)
  EXPECT_FALSE(prefix(defs, R"({"red": 1)"));
  EXPECT_FALSE(prefix(defs, R"({"b)"));
  const JsonSchema one = schema(R"({"type": "object", "propertyNames": {"const": "id"}, "minProperties": 1})");
  EXPECT_TRUE(matches(one, R"({"id": true})"));
  EXPECT_FALSE(matches(one, "{}"));
  // The enum keeps the names the keywords beside it allow.
  const JsonSchema short_names = schema(R"({"type": "object", "propertyNames": {"enum": ["a", "bb"], "maxLength": 1}})");
  EXPECT_TRUE(matches(short_names, R"({"a": 1})"));
  EXPECT_FALSE(prefix(short_names, R"({"b)"));
  // No key: false, or a type without "string".
  for (const char* none : {R"({"type": "object", "propertyNames": false})", R"({"type": "object", "propertyNames": {"type": "integer"}})",
                           R"({"type": "object", "properties": {"a": {}}, "propertyNames": {"not": {}}})"}) {
    EXPECT_TRUE(matches(schema(none), "{}")) << none;
    EXPECT_FALSE(prefix(schema(none), "{\"")) << none;
  }
  // Any key: true, {}, a type with "string".
  for (const char* any : {R"({"propertyNames": true})", R"({"propertyNames": {"type": "string"}})",
                          R"({"propertyNames": {"type": ["string", "null"], "description": "keys"}})"}) {
    EXPECT_TRUE(matches(schema(any), R"({"anything": 1, "else": 2})")) << any;
  }
  EXPECT_EQ(refusal(R"({"type": "object", "required": ["b"], "propertyNames": {"enum": ["a"]}})"),
            "json_schema at /required: 'b' is required, but propertyNames does not allow it: no object is valid");
  EXPECT_EQ(refusal(R"({"type": "object", "propertyNames": {"enum": ["a", "b"]}, "minProperties": 3})"),
            "json_schema at /: minProperties 3 with 2 properties that may be given and no other keys allowed");
  EXPECT_EQ(refusal(R"({"type": "object", "propertyNames": {"pattern": "^(a|b)$"}})").rfind(
                "json_schema at /propertyNames: a pattern with finitely many keys from some place on", 0),
            0u);
  EXPECT_EQ(refusal(R"({"type": "object", "propertyNames": {"maxLength": 3}})").rfind("json_schema at /propertyNames: ", 0), 0u);
  // A false property counts for no key minProperties could need.
  EXPECT_EQ(refusal(R"({"properties": {"a": false, "b": {}}, "additionalProperties": false, "minProperties": 2})"),
            "json_schema at /: minProperties 2 with 1 properties that may be given and no other keys allowed");
}

// dependentRequired (Draft 7's dependencies with name lists): a property given requires others,
// to the closure; the object closes only with them, a key is begun only while maxProperties
// leaves room for them, and a property that needs one that cannot be given is never given.
TEST(JsonMatcher, DependentRequiredHoldsToTheClosure) {
  const JsonSchema card = schema(R"({"type": "object", "properties": {"name": {"type": "string"}, "card": {"type": "integer"},
                                      "billing": {"type": "string"}}, "dependentRequired": {"card": ["billing"]}})");
  EXPECT_TRUE(matches(card, R"({"name": "a"})"));
  EXPECT_TRUE(matches(card, R"({"billing": "x"})"));
  EXPECT_TRUE(matches(card, R"({"card": 1, "billing": "x"})"));
  EXPECT_FALSE(matches(card, R"({"card": 1})"));
  EXPECT_FALSE(prefix(card, R"({"card": 1})"));
  EXPECT_TRUE(prefix(card, R"({"card": 1, "bi)"));
  const JsonSchema chain = schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": false,
                                       "dependencies": {"a": ["b"], "b": ["c"]}})");
  EXPECT_FALSE(matches(chain, R"({"a": 1, "b": 2})"));
  EXPECT_TRUE(matches(chain, R"({"a": 1, "b": 2, "c": 3})"));
  EXPECT_TRUE(matches(chain, R"({"c": 3})"));
  const JsonSchema room = schema(R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": false,
                                      "dependentRequired": {"a": ["b", "c"]}, "maxProperties": 2})");
  EXPECT_FALSE(prefix(room, R"({"a)"));  // a needs b and c: three keys
  EXPECT_TRUE(matches(room, R"({"b": 1, "c": 2})"));
  EXPECT_FALSE(prefix(schema(R"({"type": "object", "properties": {"a": {}}, "dependentRequired": {"a": ["b"]}, "maxProperties": 2,
                                  "additionalProperties": false})"),
                      R"({"a)"));  // b cannot be given: a is never given
  const JsonSchema other = schema(R"({"type": "object", "additionalProperties": {"type": "integer"}, "dependentRequired": {"x": ["y"]}})");
  EXPECT_TRUE(matches(other, R"({"x": 1, "y": 2})"));
  EXPECT_FALSE(matches(other, R"({"x": 1})"));
  EXPECT_FALSE(prefix(other, R"({"x": 1, "y": ")"));
  EXPECT_TRUE(matches(other, R"({"z": 1})"));
  EXPECT_EQ(refusal(R"({"type": "object", "properties": {"a": {}, "b": false}, "required": ["a"], "dependentRequired": {"a": ["b"]}})"),
            "json_schema at /required: 'a' is required, but a property it requires (dependentRequired) cannot be given: no object is valid");
  EXPECT_EQ(refusal(R"({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"], "dependentRequired": {"a": ["b"]},
                        "maxProperties": 1})"),
            "json_schema at /: 2 required properties and maxProperties 1");
  EXPECT_EQ(refusal(R"({"type": "object", "dependencies": {"a": {"required": ["b"]}}})"),
            "json_schema at /dependencies/a: dependencies with a schema (Draft 7's schema dependencies) are not supported");
  EXPECT_EQ(refusal(R"({"allOf": [{"type": "object", "dependentRequired": {"a": ["b"]}}, {"required": ["c"]}]})").rfind(
                "json_schema at /allOf/0: dependentRequired next to other schemas that must hold too is not supported", 0),
            0u);
}

// Objects may list up to 256 properties (PropertySet); past the frame's 64 bits the ones given
// are kept by index, so a listed key is still never given twice, and required properties,
// dependentRequired and maxProperties' room hold at any index.
TEST(JsonMatcher, ManyPropertiesKeepTheirRules) {
  nlohmann::json props = nlohmann::json::object();
  for (int i = 0; i < 200; ++i) props[std::string("p").append(std::to_string(1000 + i))] = {{"type", "integer"}};
  nlohmann::json s = {{"type", "object"}, {"properties", props}, {"additionalProperties", false},
                      {"required", {"p1150", "p1003"}}, {"dependentRequired", {{"p1199", {"p1100"}}}}};
  const JsonSchema big = schema(s.dump());
  EXPECT_TRUE(matches(big, R"({"p1150": 1, "p1003": 2})"));
  EXPECT_FALSE(matches(big, R"({"p1003": 2})"));  // p1150 (index 150) is required
  EXPECT_FALSE(prefix(big, R"({"p1150": 1, "p1150")"));  // given twice, past bit 64
  EXPECT_TRUE(prefix(big, R"({"p1150": 1, "p1151")"));
  EXPECT_FALSE(matches(big, R"({"p1150": 1, "p1003": 2, "p1199": 3})"));  // p1199 needs p1100
  EXPECT_TRUE(matches(big, R"({"p1150": 1, "p1003": 2, "p1199": 3, "p1100": 4})"));
  EXPECT_FALSE(prefix(big, R"({"p1150": "x)"));
  std::uint32_t rng = 5;
  for (int i = 0; i < 8; ++i) {
    bool dead_end = false;
    const std::string text = random_value(big, rng, 2, &dead_end);
    ASSERT_FALSE(dead_end) << text;
    const nlohmann::json v = nlohmann::json::parse(text);
    EXPECT_TRUE(v.contains("p1150") && v.contains("p1003")) << text;
    if (v.contains("p1199")) {
      EXPECT_TRUE(v.contains("p1100")) << text;
    }
  }
  s["maxProperties"] = 2;
  const JsonSchema tight = schema(s.dump());
  EXPECT_FALSE(prefix(tight, R"({"p1150": 1, "p1004")"));  // p1003 still missing: no room for another
  EXPECT_TRUE(matches(tight, R"({"p1150": 1, "p1003": 2})"));
  nlohmann::json too = nlohmann::json::object();
  for (int i = 0; i < 257; ++i) too[std::string("q").append(std::to_string(i))] = nlohmann::json::object();
  EXPECT_EQ(refusal(nlohmann::json{{"properties", too}}.dump()), "json_schema at /properties: more than 256 properties are not supported");
}

}  // namespace
}  // namespace staticlm
