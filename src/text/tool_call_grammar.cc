#include "text/tool_call_grammar.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "base/error.h"
#include "text/tool_calls.h"

namespace staticlm {
namespace {

using ojson = nlohmann::ordered_json;

// Schemas nested deeper than this are any value: the grammar stays small whatever is sent.
constexpr int kMaxDepth = 8;
// String lengths and item counts past this are written as unbounded (the grammar stays small).
constexpr std::int64_t kMaxCount = 1000;
// The integers `integer` writes have at most 18 digits; bounds are clamped to them.
constexpr std::int64_t kMaxMagnitude = 999'999'999'999'999'999;

// The rules every grammar shares: any Gemma 4 value (tool_calls.cc reads them back).
constexpr const char* kValueRules =
    "value ::= string | number | \"true\" | \"false\" | \"null\" | object | array\n"
    "string ::= <|\"|> [^<]* <|\"|>\n"
    "integer ::= \"-\"? ([0-9] | [1-9] [0-9]{1,17})\n"
    "number ::= integer (\".\" [0-9]{1,17})? ([eE] [-+]? [0-9]{1,3})?\n"
    "object ::= \"{\" (member (\",\" member)*)? \"}\"\n"
    "member ::= key \":\" value\n"
    "key ::= [A-Za-z_] [A-Za-z0-9_]{0,63}\n"
    "array ::= \"[\" (value (\",\" value)*)? \"]\"\n";

// s as a GBNF literal.
std::string literal(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// ---- integers in a range, as digits ---------------------------------------------------------

std::string digit_class(char lo, char hi) { return lo == hi ? literal(std::string(1, lo)) : std::string("[") + lo + "-" + hi + "]"; }
std::string any_digits(std::size_t n) { return n == 0 ? "" : " [0-9]{" + std::to_string(n) + "}"; }

// The decimal strings from a to b, both of the same length (a <= b).
std::string same_length(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  const std::string a_rest = a.substr(1), b_rest = b.substr(1);
  const std::string head = a[0] == b[0] ? literal(a.substr(0, 1)) : "";
  if (a[0] == b[0]) {
    const std::string tail = same_length(a_rest, b_rest);
    return tail.empty() ? head : head + " " + tail;
  }
  const std::string nines(a_rest.size(), '9'), zeros(a_rest.size(), '0');
  if (a_rest == zeros && b_rest == nines) return digit_class(a[0], b[0]) + any_digits(a_rest.size());
  // a's first digit with a's rest or more; the first digits strictly between; b's with b's rest or less.
  const auto led = [](char d, const std::string& tail) { return tail.empty() ? digit_class(d, d) : digit_class(d, d) + " " + tail; };
  std::string alts = led(a[0], same_length(a_rest, nines));
  if (b[0] - a[0] > 1) alts += " | " + digit_class(static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1)) + any_digits(a_rest.size());
  alts += " | " + led(b[0], same_length(zeros, b_rest));
  return "(" + alts + ")";
}

std::int64_t power10(std::size_t n) {
  std::int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// The non-negative integers in [a, b] without leading zeros; b empty: no upper bound but 18 digits.
std::string magnitudes(std::int64_t a, std::optional<std::int64_t> b) {
  const std::size_t from = std::to_string(a).size(), to = b ? std::to_string(*b).size() : 18;
  std::string alts;
  for (std::size_t d = from; d <= to; ++d) {
    const std::int64_t lo = std::max(a, d == 1 ? 0 : power10(d - 1)), hi = b ? std::min(*b, power10(d) - 1) : power10(d) - 1;
    if (lo > hi) continue;
    alts += (alts.empty() ? "" : " | ") + same_length(std::to_string(lo), std::to_string(hi));
  }
  return "(" + alts + ")";
}

// A schema's integer bounds (minimum, maximum, exclusive ones in either draft's form), clamped
// to 18 digits.
std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>> integer_bounds(const ojson& schema) {
  const auto number = [&](const char* key) -> std::optional<double> {
    const auto it = schema.find(key);
    if (it == schema.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  const auto flag = [&](const char* key) { return schema.contains(key) && schema[key].is_boolean() && schema[key].get<bool>(); };
  const auto clamp = [](double v) { return static_cast<std::int64_t>(std::clamp(v, -double(kMaxMagnitude), double(kMaxMagnitude))); };
  std::optional<std::int64_t> lo, hi;
  if (const auto m = number("minimum")) lo = clamp(flag("exclusiveMinimum") ? std::floor(*m) + 1 : std::ceil(*m));
  if (const auto m = number("exclusiveMinimum")) lo = std::max(lo.value_or(-kMaxMagnitude), clamp(std::floor(*m) + 1));
  if (const auto m = number("maximum")) hi = clamp(flag("exclusiveMaximum") ? std::ceil(*m) - 1 : std::floor(*m));
  if (const auto m = number("exclusiveMaximum")) hi = std::min(hi.value_or(kMaxMagnitude), clamp(std::ceil(*m) - 1));
  return {lo, hi};
}

// A count from a schema's key (minLength, maxItems, ...): a non-negative integer, else nothing.
std::optional<std::int64_t> count_of(const ojson& schema, const char* key) {
  const auto it = schema.find(key);
  if (it == schema.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) return std::nullopt;
  return it->get<std::int64_t>();
}

// "{m,n}" for counts from min to max (max past kMaxCount: no bound).
std::string repeat(std::int64_t min, std::optional<std::int64_t> max) {
  min = std::min(min, kMaxCount);
  if (!max || *max > kMaxCount) return min == 0 ? "*" : "{" + std::to_string(min) + ",}";
  return "{" + std::to_string(min) + "," + std::to_string(*max) + "}";
}

class GrammarWriter {
 public:
  // A new rule named after `kind`; its name.
  std::string add(const std::string& kind, const std::string& body) {
    std::string name = kind + std::to_string(rules_.size());
    rules_ += name + " ::= " + body + "\n";
    return name;
  }
  const std::string& rules() const { return rules_; }

  // A tool's arguments: its `parameters` schema, which `$ref`s inside it point into.
  std::string arguments(const ojson& parameters) {
    root_ = &parameters;
    return object(parameters, 0);
  }

  // The elements a value of `schema` is written as.
  std::string value(const ojson& schema, int depth) {
    if (!schema.is_object() || depth > kMaxDepth) return "value";
    // A reference within the parameters (pydantic's "#/$defs/Name"), and allOf of one schema
    // (pydantic's wrapper that adds a description to a reference): the schema they name. The
    // keywords beside them are not followed.
    if (schema.contains("$ref")) {
      const ojson* target = resolve(schema["$ref"]);
      return target ? value(*target, depth + 1) : "value";
    }
    if (schema.contains("allOf") && schema["allOf"].is_array() && schema["allOf"].size() == 1) {
      return value(schema["allOf"][0], depth + 1);
    }
    if (schema.contains("const")) return constant(schema["const"]);
    if (schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty()) {
      std::string alts;
      for (const ojson& v : schema["enum"]) alts += (alts.empty() ? "" : " | ") + constant(v);
      return "(" + alts + ")";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key) || !schema[key].is_array() || schema[key].empty()) continue;
      std::string alts;
      for (const ojson& s : schema[key]) alts += (alts.empty() ? "" : " | ") + value(s, depth + 1);
      return "(" + alts + ")";
    }
    if (!schema.contains("type")) return schema.contains("properties") ? object(schema, depth) : "value";
    const ojson& type = schema["type"];
    if (type.is_string()) return typed(schema, type.get<std::string>(), depth);
    if (!type.is_array()) return "value";
    // Each type once: the schema's properties or items are then written at most once each.
    std::set<std::string> seen;
    std::string alts;
    for (const ojson& t : type) {
      if (!t.is_string() || !seen.insert(t.get<std::string>()).second) continue;
      alts += (alts.empty() ? "" : " | ") + typed(schema, t.get<std::string>(), depth);
    }
    return alts.empty() ? "value" : "(" + alts + ")";
  }

  // A value of `schema` read as of type t.
  std::string typed(const ojson& schema, const std::string& t, int depth) {
    if (t == "string") return string(schema);
    if (t == "integer") return integer(schema);
    if (t == "number") return "number";
    if (t == "boolean") return "(\"true\" | \"false\")";
    if (t == "null") return "\"null\"";
    if (t == "array") return array(schema, depth);
    if (t == "object") return object(schema, depth);
    return "value";
  }

  // {key:value,...}: the schema's properties in their declared order, the required ones first;
  // any members when it names none.
  std::string object(const ojson& schema, int depth) {
    if (!schema.contains("properties") || !schema["properties"].is_object() || schema["properties"].empty()) {
      return "object";
    }
    std::set<std::string> required;
    if (schema.contains("required") && schema["required"].is_array()) {
      for (const ojson& r : schema["required"]) {
        if (r.is_string()) required.insert(r.get<std::string>());
      }
    }
    std::vector<std::string> must, may;  // each a member's elements
    for (const auto& [key, sub] : schema["properties"].items()) {
      const std::string member = add("member", literal(key + ":") + " " + value(sub, depth + 1));
      (required.count(key) ? must : may).push_back(member);
    }
    std::string inner;
    if (!must.empty()) {
      for (const std::string& m : must) inner += (inner.empty() ? "" : " \",\" ") + m;
      for (const std::string& m : may) inner += " (\",\" " + m + ")?";
      return add("args", "\"{\" " + inner + " \"}\"");
    }
    // Only optional members: the first one present, then any of those after it, as two chains
    // of rules (linear in the members): rest_i ::= ("," m_i)? rest_i+1; first_i ::= m_i rest_i+1 | first_i+1.
    std::string rest, first;  // the chains' rules from i + 1 on
    for (std::size_t i = may.size(); i-- > 0;) {
      const std::string tail = rest.empty() ? "" : " " + rest;
      const std::string head = may[i] + tail;
      first = add("first", first.empty() ? head : head + " | " + first);
      rest = add("rest", "(\",\" " + may[i] + ")?" + tail);
    }
    return add("args", "\"{\" (" + first + ")? \"}\"");
  }

 private:
  // A string of minLength..maxLength code points (none of them '<').
  std::string string(const ojson& schema) {
    const std::optional<std::int64_t> min = count_of(schema, "minLength"), max = count_of(schema, "maxLength");
    if (!min && !max) return "string";
    if (max && *max < min.value_or(0)) return "string";  // no string fits: the bounds are not followed
    if (max && *max == 0) return "<|\"|> <|\"|>";
    return add("text", "<|\"|> [^<]" + repeat(min.value_or(0), max) + " <|\"|>");
  }

  // An integer within the schema's bounds.
  std::string integer(const ojson& schema) {
    const auto [lo, hi] = integer_bounds(schema);
    if (!lo && !hi) return "integer";
    if (lo && hi && *lo > *hi) return "integer";  // no integer fits: the bounds are not followed
    std::string alts;
    if (!hi || *hi >= 0) alts = magnitudes(std::max<std::int64_t>(lo.value_or(0), 0), hi);
    if (!lo || *lo < 0) {
      const std::int64_t least = hi && *hi < 0 ? -*hi : 1;
      alts += (alts.empty() ? "" : " | ") + std::string("\"-\" ") +
              magnitudes(least, lo ? std::optional<std::int64_t>(-*lo) : std::nullopt);
    }
    return add("int", alts);
  }

  // [item,...] with minItems..maxItems items.
  std::string array(const ojson& schema, int depth) {
    const std::optional<std::int64_t> min = count_of(schema, "minItems"), max = count_of(schema, "maxItems");
    const bool typed_items = schema.contains("items") && schema["items"].is_object();
    if (!typed_items && !min && !max) return "array";
    const std::string item = typed_items ? value(schema["items"], depth + 1) : "value";
    const std::int64_t lo = min.value_or(0);
    if (max && *max < lo) return "array";  // no count fits: the bounds are not followed
    if (max && *max == 0) return "\"[\" \"]\"";
    // The items after the first: one fewer than the counts.
    const std::string more =
        max && *max == 1 ? ""
                         : " (\",\" " + item + ")" +
                               repeat(std::max<std::int64_t>(lo - 1, 0), max ? std::optional<std::int64_t>(*max - 1) : std::nullopt);
    const std::string items = item + more;
    return add("list", "\"[\" " + (lo == 0 ? "(" + items + ")?" : items) + " \"]\"");
  }

  // The schema a local reference names: "#" (the parameters) or a JSON pointer into them.
  const ojson* resolve(const ojson& ref) const {
    if (root_ == nullptr || !ref.is_string()) return nullptr;
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') return nullptr;
    try {
      const ojson& target = r == "#" ? *root_ : root_->at(ojson::json_pointer(r.substr(1)));
      return &target;
    } catch (const ojson::exception&) {
      return nullptr;
    }
  }

  // One JSON value as Gemma 4 writes it: strings in <|"|>, the rest as JSON.
  static std::string constant(const ojson& v) {
    if (v.is_string()) return "<|\"|> " + literal(v.get<std::string>()) + " <|\"|>";
    if (v.is_object() || v.is_array()) return "value";
    return literal(v.dump());
  }

  std::string rules_;
  const ojson* root_ = nullptr;
};

// A tool's function: {"type": "function", "function": {...}} or the function itself.
const ojson* function_of(const ojson& tool) {
  if (!tool.is_object()) return nullptr;
  const ojson* f = tool.contains("function") && tool["function"].is_object() ? &tool["function"] : &tool;
  if (!f->contains("name") || !(*f)["name"].is_string() || (*f)["name"].get<std::string>().empty()) return nullptr;
  return f;
}

}  // namespace

std::string gemma4_tool_call_grammar(const ojson& tools, const std::string& only, bool parallel, const std::string& what,
                                     bool thought_first) {
  GrammarWriter w;
  std::string calls;
  std::vector<std::string> names;
  if (tools.is_array()) {
    for (const ojson& tool : tools) {
      const ojson* f = function_of(tool);
      if (f == nullptr) continue;
      const std::string name = (*f)["name"].get<std::string>();
      names.push_back(name);
      if (!only.empty() && name != only) continue;
      const std::string args = f->contains("parameters") ? w.arguments((*f)["parameters"]) : "object";
      const std::string call = w.add("call", std::string(kToolCallOpen) + " " + literal("call:" + name) + " " + args + " " +
                                                 std::string(kToolCallClose));
      calls += (calls.empty() ? "" : " | ") + call;
    }
  }
  if (names.empty()) invalid_argument(what + ": forcing a tool call needs tools, and no tool has a function name");
  if (calls.empty()) {
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    invalid_argument(what + ": no tool is named \"" + only + "\" (the tools: " + known + ")");
  }
  const std::string thought = thought_first ? "(<|channel> (!<channel|>)* <channel|>)? " : "";
  return "root ::= " + thought + "(" + calls + ")" + (parallel ? "+" : "") + "\n" + w.rules() + kValueRules;
}

ToolChoice tool_choice_from_text(const std::string& text) {
  if (text == "auto") return {};
  if (text == "none") return {ToolChoice::Mode::kNone, ""};
  if (text == "required") return {ToolChoice::Mode::kRequired, ""};
  return {ToolChoice::Mode::kFunction, text};
}

ToolChoiceConstraint tool_choice_constraint(const ojson& tools, const ToolChoice& choice, bool parallel, const std::string& what,
                                            bool thought_first) {
  switch (choice.mode) {
    case ToolChoice::Mode::kAuto:
      return {};
    case ToolChoice::Mode::kNone:
      return {"", true};
    case ToolChoice::Mode::kRequired:
      return {gemma4_tool_call_grammar(tools, "", parallel, what, thought_first), false};
    case ToolChoice::Mode::kFunction:
      if (choice.function.empty()) invalid_argument(what + ": expected the name of one of the tools");
      return {gemma4_tool_call_grammar(tools, choice.function, parallel, what, thought_first), false};
  }
  return {};
}

}  // namespace staticlm
