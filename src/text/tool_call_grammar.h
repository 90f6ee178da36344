// A GBNF grammar (gbnf.h) whose texts are Gemma 4 tool calls (tool_calls.h) of a request's tools:
// what serve uses to force a call (OpenAI's tool_choice "required" or a named function).
//
//   <|tool_call>call:NAME{key:value,...}<tool_call|>
//
// Each tool's arguments follow its `parameters` schema where the schema says enough: the
// properties by name in their declared order (the required ones always, the others optional),
// and a property's value by its enum / const, or its type (string with its length bounds,
// integer with its bounds, number, boolean, null, array of items with its count bounds, object
// of properties); a local $ref and an allOf of one schema by the schema they name. Anything else
// is any Gemma 4 value (docs/server.md lists what is not followed). Strings are <|"|>...<|"|>
// without a '<' inside, so the text cannot open another special token.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace staticlm {

// `tools`: OpenAI's tool schemas ({"type": "function", "function": {"name", "parameters"}}; a
// bare {"name", "parameters"} too). `only`: the one function allowed ("" : any of them).
// `parallel`: one or more calls, else exactly one. `thought_first`: a thought channel
// (<|channel>...<channel|>, Gemma 4's thinking when the template turned it on) may come before
// the calls. kInvalidArgument naming `what` (e.g. "tool_choice") when no tool has a name, or
// `only` names none of them.
std::string gemma4_tool_call_grammar(const nlohmann::ordered_json& tools, const std::string& only, bool parallel,
                                     const std::string& what, bool thought_first = false);

// OpenAI's tool_choice, one meaning for serve, run and the library: "auto" leaves calling to the
// model; "none" bans the token that opens a call (the tools are still rendered, as llama.cpp
// does); "required" forces calls of any tool; a function's name forces calls of that one.
struct ToolChoice {
  enum class Mode { kAuto, kNone, kRequired, kFunction };
  Mode mode = Mode::kAuto;
  std::string function;  // kFunction's name
};

// run's --tool-choice and the library's string form: auto, none, required, else a function's name.
ToolChoice tool_choice_from_text(const std::string& text);

// What a choice asks of generation: the grammar of the forced calls ("" when none are forced),
// and whether kToolCallOpen (tool_calls.h) is banned. kInvalidArgument naming `what` as
// gemma4_tool_call_grammar.
struct ToolChoiceConstraint {
  std::string grammar;
  bool ban_call_open = false;
};
ToolChoiceConstraint tool_choice_constraint(const nlohmann::ordered_json& tools, const ToolChoice& choice, bool parallel,
                                            const std::string& what, bool thought_first = false);

}  // namespace staticlm
