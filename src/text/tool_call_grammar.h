// A GBNF grammar (gbnf.h) whose texts are Gemma 4 tool calls (tool_calls.h) of a request's tools:
// what serve uses to force a call (OpenAI's tool_choice "required" or a named function).
//
//   <|tool_call>call:NAME{key:value,...}<tool_call|>
//
// Each tool's arguments follow its `parameters` schema where the schema says enough: the
// properties by name in their declared order (the required ones always, the others optional),
// and a property's value by its enum / const, or its type (string, integer, number, boolean,
// null, array of items, object of properties). Anything else is any Gemma 4 value. Strings are
// <|"|>...<|"|> without a '<' inside, so the text cannot open another special token.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace staticlm {

// `tools`: OpenAI's tool schemas ({"type": "function", "function": {"name", "parameters"}}; a
// bare {"name", "parameters"} too). `only`: the one function allowed ("" : any of them).
// `parallel`: one or more calls, else exactly one. kInvalidArgument naming `what` (e.g.
// "tool_choice") when no tool has a name, or `only` names none of them.
std::string gemma4_tool_call_grammar(const nlohmann::ordered_json& tools, const std::string& only, bool parallel,
                                     const std::string& what);

}  // namespace staticlm
