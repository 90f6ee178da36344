#include "text/thought_split.h"

#include <algorithm>

#include "text/tool_calls.h"

namespace staticlm {

namespace {

// The length of the longest end of `text` that begins `marker` (shorter than the marker).
std::size_t partial_marker(std::string_view text, std::string_view marker) {
  for (std::size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ThoughtSplit::Parts ThoughtSplit::push(std::string_view piece) {
  held_.append(piece);
  Parts out;
  for (;;) {
    if (!in_thought_) {
      const std::size_t open = held_.find(kThoughtOpen);
      if (open != std::string::npos) {
        out.answer.append(held_, 0, open);
        held_.erase(0, open + kThoughtOpen.size());
        in_thought_ = naming_ = true;
        continue;
      }
      const std::size_t keep = partial_marker(held_, kThoughtOpen);
      out.answer.append(held_, 0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    const std::size_t close = held_.find(kThoughtClose);
    if (close != std::string::npos) {
      const std::string_view thought = std::string_view(held_).substr(0, close);
      out.thought.append(naming_ ? thought_text(thought) : thought);
      held_.erase(0, close + kThoughtClose.size());
      in_thought_ = naming_ = false;
      continue;
    }
    const std::size_t keep = partial_marker(held_, kThoughtClose);
    const std::string_view ready = std::string_view(held_).substr(0, held_.size() - keep);
    if (naming_) {
      if (may_be_thought_name(ready)) return out;  // more text decides
      naming_ = false;
      const std::size_t name = ready.size() - thought_text(ready).size();  // the name line, or nothing
      held_.erase(0, name);
      continue;
    }
    out.thought.append(ready);
    held_.erase(0, ready.size());
    return out;
  }
}

ThoughtSplit::Parts ThoughtSplit::finish() {
  Parts out;
  if (!in_thought_) {
    out.answer = std::move(held_);
  } else {
    out.thought = naming_ ? std::string(thought_text(held_)) : std::move(held_);
  }
  held_.clear();
  in_thought_ = naming_ = false;
  return out;
}

}  // namespace staticlm
