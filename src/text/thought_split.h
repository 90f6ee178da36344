// ThoughtSplit: a reply's text, streamed piece by piece, split into Gemma 4's thought channels
// (<|channel>thought\n...<channel|>) and the rest, as parse_gemma4_reply splits a whole text:
// the markers and the channel's name line are left out, and a marker (or a name) cut across
// pieces is held back until the next pieces decide it. For a terminal that shows the thinking
// apart from the answer (`staticlm chat`).
//
// One per reply; not thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace staticlm {

class ThoughtSplit {
 public:
  struct Parts {
    std::string answer, thought;
  };
  // The text this piece completes, on each side (often empty: held back).
  Parts push(std::string_view piece);
  // What is held back: a partial marker is text of its side; a thought never closed runs to the
  // end. Then the split is done.
  Parts finish();
  // Whether the text so far ends inside a thought (its opening marker given).
  bool in_thought() const { return in_thought_; }

 private:
  std::string held_;      // not yet given out: it may begin a marker, or be the channel's name
  bool in_thought_ = false;
  bool naming_ = false;   // in a thought whose name line is not decided yet
};

}  // namespace staticlm
