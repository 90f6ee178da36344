#include "text/thought_split.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "text/tool_calls.h"

namespace staticlm {
namespace {

// Pieces in, the two sides out, concatenated.
ThoughtSplit::Parts split_all(const std::vector<std::string>& pieces) {
  ThoughtSplit s;
  ThoughtSplit::Parts all;
  for (const std::string& p : pieces) {
    const ThoughtSplit::Parts got = s.push(p);
    all.answer += got.answer;
    all.thought += got.thought;
  }
  const ThoughtSplit::Parts tail = s.finish();
  all.answer += tail.answer;
  all.thought += tail.thought;
  return all;
}

TEST(ThoughtSplit, MarkersAndTheNameLeaveTheTextAsTheyArrive) {
  ThoughtSplit s;
  EXPECT_EQ(s.push("Sure. <|chan").answer, "Sure. ");  // a marker's beginning held back
  EXPECT_FALSE(s.in_thought());
  ThoughtSplit::Parts p = s.push("nel>thoug");
  EXPECT_TRUE(s.in_thought());
  EXPECT_EQ(p.answer, "");
  EXPECT_EQ(p.thought, "");  // "thoug" may be the name
  p = s.push("ht\nLet me see<chan");
  EXPECT_EQ(p.thought, "Let me see");
  p = s.push("nel|>42");
  EXPECT_FALSE(s.in_thought());
  EXPECT_EQ(p.thought, "");
  EXPECT_EQ(p.answer, "42");
  EXPECT_EQ(s.finish().answer, "");
}

// Random replies of answer text and thoughts (named or not, closed or not, markers and names
// cut anywhere) against parse_gemma4_reply of the whole text: the same thought text, and the
// same answer (no tool calls in these texts, so its text is everything outside the thoughts).
TEST(ThoughtSplit, EqualsTheWholeTextsSplitOnRandomPieces) {
  std::mt19937 rng(7);
  const std::vector<std::string> bits = {"a", "b c", "<", "|", ">", "\n", "thou", "ght", "thought\n", "<|chan", "nel>",
                                         "<chan", "nel|>", "<|channel>", "<channel|>", "<|channel>thought\n", "é"};
  for (int round = 0; round < 3000; ++round) {
    std::string whole;
    const int n = static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) whole += bits[rng() % bits.size()];
    std::vector<std::string> pieces;
    for (std::size_t at = 0; at < whole.size();) {
      const std::size_t len = 1 + rng() % 6;
      pieces.push_back(whole.substr(at, len));
      at += len;
    }
    const ModelReply want = parse_gemma4_reply(whole);
    const ThoughtSplit::Parts got = split_all(pieces);
    EXPECT_EQ(got.thought, want.reasoning) << "whole: " << whole;
    EXPECT_EQ(got.answer, want.text) << "whole: " << whole;
  }
}

}  // namespace
}  // namespace staticlm
