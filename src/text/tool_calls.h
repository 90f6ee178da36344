// Gemma 4 tool calls in generated text (spec/gemma4.md §5.5): each call is
//   <|tool_call>call:NAME{key:value,...}<tool_call|>
// where a string value is wrapped in <|"|>...<|"|>, and values may be numbers, true/false/null,
// nested {...} objects and [...] lists. The reply is the text with the calls taken out, and the
// calls as {name, arguments (a JSON object)}.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace staticlm {

// The special tokens that open and close a call.
constexpr std::string_view kToolCallOpen = "<|tool_call>", kToolCallClose = "<tool_call|>";

// The special tokens around a thought (Gemma 4's thinking); the channel's name line opens it.
constexpr std::string_view kThoughtOpen = "<|channel>", kThoughtClose = "<channel|>";

// A thought's text without the channel's name line ("thought\n"): "" while `thought` is the
// name or a beginning of it (a stream waits for more), the text as it is when it names no channel.
std::string_view thought_text(std::string_view thought);
// Whether a thought begun so far may still be its name (more text decides).
bool may_be_thought_name(std::string_view thought);

struct ToolCall {
  std::string name;
  nlohmann::ordered_json arguments = nlohmann::ordered_json::object();
};

struct ModelReply {
  std::string text;  // the generated text without the tool-call spans and thoughts
  std::vector<ToolCall> tool_calls;
  // The thought channels' text (<|channel>thought\n...<channel|>, Gemma 4's thinking), the
  // channel's name line left out; a thought the reply never closes runs to its end.
  std::string reasoning;
};

// A call that does not parse stays in the text (nothing is thrown: it is model output).
ModelReply parse_gemma4_reply(std::string_view generated);

// {"text": ..., "tool_calls": [{"type": "function", "function": {"name", "arguments": {...}}}]},
// and "reasoning" last when the reply had a thought.
std::string reply_json(const ModelReply& reply);

}  // namespace staticlm
