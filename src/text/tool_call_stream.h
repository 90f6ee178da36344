// ToolCallStream: a reply streamed token by token with its Gemma 4 tool calls taken out. The ids
// between <|tool_call> and <tool_call|> are held back; when the call closes it is parsed
// (text/tool_calls.h) and added to calls(), or, when it does not parse, given back as text.
// With take_reasoning, a thought channel (<|channel>thought\n...<channel|>, Gemma 4's thinking)
// is reasoning, not text: take_reasoning() hands it out (the channel's name left out), as
// llama.cpp's and vLLM's reasoning_content. Everything else is the reply's text, special tokens
// left out (what a chat client shows).
//
// Borrows the Tokenizer, which must outlive it; one stream per reply, not thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "text/detokenizer.h"
#include "text/tokenizer.h"
#include "text/tool_calls.h"

namespace staticlm {

class ToolCallStream {
 public:
  // take_calls false: the calls stay in the text (a plain detokenizer, special tokens skipped).
  explicit ToolCallStream(const Tokenizer& tokenizer, bool take_calls = true, bool take_reasoning = false);
  // Adds one generated id; returns the text it completes (often empty).
  std::string push(int id);
  // The text still held back, an unclosed call's included (as text); then the stream is done.
  std::string finish();
  const std::vector<ToolCall>& calls() const { return calls_; }
  // Whether the ids pushed so far end inside an open call (its opening marker included).
  bool in_call() const { return in_call_; }
  // Whether the ids pushed so far end inside a thought channel (its markers included).
  bool in_thought() const { return in_thought_; }
  // The reasoning text completed since the last call (finish() completes an unclosed thought).
  std::string take_reasoning() { return std::exchange(reasoning_, std::string()); }

 private:
  const Tokenizer& tokenizer_;
  int open_ = -1, close_ = -1;  // the marker ids; -1 when the vocabulary has none
  IncrementalDetokenizer text_;
  std::vector<int> call_;  // ids of the open call, markers included
  bool in_call_ = false;
  std::vector<ToolCall> calls_;
  int thought_open_ = -1, thought_close_ = -1;  // <|channel>, <channel|>; -1 without take_reasoning
  IncrementalDetokenizer thought_;
  bool in_thought_ = false;
  bool naming_ = false;  // the channel's name ("thought\n") not yet passed
  std::string name_;     // the thought's text while naming_
  std::string reasoning_;

  void add_reasoning(const std::string& text);
};

}  // namespace staticlm
