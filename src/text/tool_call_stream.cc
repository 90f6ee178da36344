#include "text/tool_call_stream.h"

namespace staticlm {

ToolCallStream::ToolCallStream(const Tokenizer& tokenizer, bool take_calls)
    : tokenizer_(tokenizer),
      open_(take_calls ? tokenizer.token_to_id(kToolCallOpen) : -1),
      close_(take_calls ? tokenizer.token_to_id(kToolCallClose) : -1),
      text_(tokenizer, /*skip_special_tokens=*/true) {}

std::string ToolCallStream::push(int id) {
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
  std::string out;
  if (in_call_) {
    for (int x : call_) out += text_.push(x);
    call_.clear();
    in_call_ = false;
  }
  return out + text_.finish();
}

}  // namespace staticlm
