// Gemma 4 tool calls for a library user's own agent loop: the grammar that forces calls of a
// set of tools (give it to GenerateParams::grammar) and the calls parsed out of a reply. These
// are what `staticlm serve` does for OpenAI's tool_choice and message.tool_calls, and what
// `staticlm run --tool-choice` / `--json` do (docs/chat-templates.md).
//
// A call is written <|tool_call>call:NAME{key:value,...}<tool_call|>, strings in <|"|>.
#pragma once

#include <string>
#include <vector>

#include "staticlm/error.h"

namespace staticlm::api {

// A GBNF grammar whose texts are calls of the tools in `tools_json` (OpenAI's tool schemas, a
// JSON array): `tool_choice` "required" allows any of them, a function's name only that one;
// one or more calls, exactly one when `parallel` is false. The arguments follow each tool's
// `parameters` where the schema says enough (docs/server.md). kInvalidArgument naming the
// tools or the choice for JSON that does not parse, no named tool, or a name the tools lack.
std::string tool_call_grammar(const std::string& tools_json, const std::string& tool_choice = "required",
                              bool parallel = true);

struct ParsedToolCall {
  std::string name;
  std::string arguments_json;  // a JSON object
};

struct ParsedReply {
  std::string text;  // the reply without the call spans and thoughts
  std::vector<ParsedToolCall> tool_calls;
  std::string reasoning;  // the thought channels' text (Gemma 4's thinking), "" without one
};

// The calls in a generated text (GenerationResult::text keeps the call tokens). A call that
// does not parse stays in the text.
ParsedReply parse_tool_calls(const std::string& text);

}  // namespace staticlm::api
