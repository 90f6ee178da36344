#include "text/tool_call_grammar.h"

#include <cstdio>
#include <set>
#include <vector>

#include "base/error.h"
#include "text/tool_calls.h"

namespace staticlm {
namespace {

using ojson = nlohmann::ordered_json;

// Schemas nested deeper than this are any value: the grammar stays small whatever is sent.
constexpr int kMaxDepth = 8;

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

class GrammarWriter {
 public:
  // A new rule named after `kind`; its name.
  std::string add(const std::string& kind, const std::string& body) {
    std::string name = kind + std::to_string(rules_.size());
    rules_ += name + " ::= " + body + "\n";
    return name;
  }
  const std::string& rules() const { return rules_; }

  // The elements a value of `schema` is written as.
  std::string value(const ojson& schema, int depth) {
    if (!schema.is_object() || depth > kMaxDepth) return "value";
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
    if (t == "string") return "string";
    if (t == "integer") return "integer";
    if (t == "number") return "number";
    if (t == "boolean") return "(\"true\" | \"false\")";
    if (t == "null") return "\"null\"";
    if (t == "array") {
      if (!schema.contains("items") || !schema["items"].is_object()) return "array";
      const std::string item = value(schema["items"], depth + 1);
      return add("list", "\"[\" (" + item + " (\",\" " + item + ")*)? \"]\"");
    }
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
  // One JSON value as Gemma 4 writes it: strings in <|"|>, the rest as JSON.
  static std::string constant(const ojson& v) {
    if (v.is_string()) return "<|\"|> " + literal(v.get<std::string>()) + " <|\"|>";
    if (v.is_object() || v.is_array()) return "value";
    return literal(v.dump());
  }

  std::string rules_;
};

// A tool's function: {"type": "function", "function": {...}} or the function itself.
const ojson* function_of(const ojson& tool) {
  if (!tool.is_object()) return nullptr;
  const ojson* f = tool.contains("function") && tool["function"].is_object() ? &tool["function"] : &tool;
  if (!f->contains("name") || !(*f)["name"].is_string() || (*f)["name"].get<std::string>().empty()) return nullptr;
  return f;
}

}  // namespace

std::string gemma4_tool_call_grammar(const ojson& tools, const std::string& only, bool parallel, const std::string& what) {
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
      const std::string args = f->contains("parameters") ? w.object((*f)["parameters"], 0) : "object";
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
  return "root ::= (" + calls + ")" + (parallel ? "+" : "") + "\n" + w.rules() + kValueRules;
}

ToolChoice tool_choice_from_text(const std::string& text) {
  if (text == "auto") return {};
  if (text == "none") return {ToolChoice::Mode::kNone, ""};
  if (text == "required") return {ToolChoice::Mode::kRequired, ""};
  return {ToolChoice::Mode::kFunction, text};
}

ToolChoiceConstraint tool_choice_constraint(const ojson& tools, const ToolChoice& choice, bool parallel, const std::string& what) {
  switch (choice.mode) {
    case ToolChoice::Mode::kAuto:
      return {};
    case ToolChoice::Mode::kNone:
      return {"", true};
    case ToolChoice::Mode::kRequired:
      return {gemma4_tool_call_grammar(tools, "", parallel, what), false};
    case ToolChoice::Mode::kFunction:
      if (choice.function.empty()) invalid_argument(what + ": expected the name of one of the tools");
      return {gemma4_tool_call_grammar(tools, choice.function, parallel, what), false};
  }
  return {};
}

}  // namespace staticlm
