#include "text/tool_call_stream.h"

namespace staticlm {

ToolCallStream::ToolCallStream(const Tokenizer& tokenizer, bool take_calls, bool take_reasoning)
    : tokenizer_(tokenizer),
      open_(take_calls ? tokenizer.token_to_id(kToolCallOpen) : -1),
      close_(take_calls ? tokenizer.token_to_id(kToolCallClose) : -1),
      text_(tokenizer, /*skip_special_tokens=*/true),
      thought_open_(take_reasoning ? tokenizer.token_to_id(kThoughtOpen) : -1),
      thought_close_(take_reasoning ? tokenizer.token_to_id(kThoughtClose) : -1),
      thought_(tokenizer, /*skip_special_tokens=*/true) {
  if (thought_close_ < 0) thought_open_ = -1;
}

void ToolCallStream::add_reasoning(const std::string& text) {
  if (!naming_) {
    reasoning_ += text;
    return;
  }
  name_ += text;
  if (may_be_thought_name(name_)) return;
  naming_ = false;
  reasoning_ += thought_text(name_);
  name_.clear();
}

std::string ToolCallStream::push(int id) {
  if (in_thought_) {
    if (id != thought_close_) {
      add_reasoning(thought_.push(id));
      return "";
    }
    add_reasoning(thought_.finish());
    in_thought_ = naming_ = false;  // a thought of its name alone has no reasoning
    name_.clear();
    return "";
  }
  if (!in_call_ && id == thought_open_ && thought_open_ >= 0) {
    in_thought_ = naming_ = true;
    return text_.finish();  // text before the thought is complete
  }
  if (!in_call_ && id == open_ && open_ >= 0) {
    in_call_ = true;
    call_.assign(1, id);
    return text_.finish();  // text before the call is complete
  }
  if (!in_call_) return text_.push(id);
  call_.push_back(id);
  if (id != close_) return "";
  in_call_ = false;
  // Decoded with the special tokens: the markers and the <|"|> string quotes are the syntax.
  ModelReply r = parse_gemma4_reply(tokenizer_.decode(call_, /*skip_special_tokens=*/false));
  for (ToolCall& c : r.tool_calls) calls_.push_back(std::move(c));
  if (r.tool_calls.empty()) {
    // Not a call after all: its ids are reply text like any other.
    std::string out;
    for (int x : call_) out += text_.push(x);
    call_.clear();
    return out;
  }
  call_.clear();
  return "";
}

std::string ToolCallStream::finish() {
  if (in_thought_) {  // an unclosed thought (the reply ran out) is reasoning all the same
    add_reasoning(thought_.finish());
    in_thought_ = naming_ = false;
    name_.clear();
  }
  std::string out;
  if (in_call_) {
    for (int x : call_) out += text_.push(x);
    call_.clear();
    in_call_ = false;
  }
  return out + text_.finish();
}

}  // namespace staticlm
