// check_json_depth: documents nested up to kMaxJsonDepth pass; one level more is refused naming
// the file and the byte; brackets inside strings (escaped quotes included) do not count.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "base/json_depth.h"

namespace staticlm {
namespace {

std::string nested(int depth, const std::string& inner = "1") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += i % 2 ? "{\"k\": " : "[";
  s += inner;
  for (int i = depth - 1; i >= 0; --i) s += i % 2 ? "}" : "]";
  return s;
}

TEST(JsonDepth, LimitIsExactAndNamedInTheError) {
  EXPECT_NO_THROW(check_json_depth(nested(kMaxJsonDepth), "a.json"));
  try {
    check_json_depth(nested(kMaxJsonDepth + 1), "a.json");
    FAIL() << "one level past the limit passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    // The 129th opening bracket: 64 "[" (1 byte) and 64 "{\"k\": " (6 bytes) come before it.
    EXPECT_EQ(std::string(e.what()), "a.json: JSON nested deeper than 128 levels (the limit), at byte " + std::to_string(64 + 64 * 6));
  }
}

TEST(JsonDepth, BracketsInStringsDoNotCount) {
  const std::string brackets(1000, '[');
  EXPECT_NO_THROW(check_json_depth("{\"a\": \"" + brackets + "\"}", "s.json"));
  // An escaped quote does not end the string; an escaped backslash before a quote does.
  EXPECT_NO_THROW(check_json_depth("[\"\\\"" + brackets + "\"]", "s.json"));
  EXPECT_THROW(check_json_depth("[\"\\\\\"" + brackets + "\"]", "s.json"), Error);
  // Siblings do not add up: a long flat array is one level.
  std::string flat = "[";
  for (int i = 0; i < 10000; ++i) flat += (i ? "," : "") + std::string("[1]");
  EXPECT_NO_THROW(check_json_depth(flat + "]", "flat.json"));
}

}  // namespace
}  // namespace staticlm
