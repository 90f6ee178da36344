// check_json_limits: documents nested up to kMaxJsonDepth pass; one level more is refused naming
// the file and the byte; brackets inside strings (escaped quotes included) do not count.
// Integers of int64's range pass, one past either end is refused; floats of any size and digits
// inside strings are left to the parser. Object members are counted per object against a cap.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "base/json_limits.h"

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
  EXPECT_NO_THROW(check_json_limits(nested(kMaxJsonDepth), "a.json"));
  try {
    check_json_limits(nested(kMaxJsonDepth + 1), "a.json");
    FAIL() << "one level past the limit passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    // The 129th opening bracket: 64 "[" (1 byte) and 64 "{\"k\": " (6 bytes) come before it.
    EXPECT_EQ(std::string(e.what()), "a.json: JSON nested deeper than 128 levels (the limit), at byte " + std::to_string(64 + 64 * 6));
  }
}

TEST(JsonDepth, BracketsInStringsDoNotCount) {
  const std::string brackets(1000, '[');
  EXPECT_NO_THROW(check_json_limits("{\"a\": \"" + brackets + "\"}", "s.json"));
  // An escaped quote does not end the string; an escaped backslash before a quote does.
  EXPECT_NO_THROW(check_json_limits("[\"\\\"" + brackets + "\"]", "s.json"));
  EXPECT_THROW(check_json_limits("[\"\\\\\"" + brackets + "\"]", "s.json"), Error);
  // Siblings do not add up: a long flat array is one level.
  std::string flat = "[";
  for (int i = 0; i < 10000; ++i) flat.append(i ? ",[1]" : "[1]");
  EXPECT_NO_THROW(check_json_limits(flat + "]", "flat.json"));
}

TEST(JsonLimits, Int64RangeIsExactAndNamedInTheError) {
  EXPECT_NO_THROW(check_json_limits("[9223372036854775807, -9223372036854775808, 0, -0, 12]", "i.json", JsonLimits{true, 0}));
  EXPECT_NO_THROW(check_json_limits("{\"a\": [00000000000000000000001]}", "i.json", JsonLimits{true, 0}));  // leading zeros do not count
  for (const std::string big : {"9223372036854775808", "18446744073709551616", "-9223372036854775809",
                                "100000000000000000000000000000"}) {
    try {
      EXPECT_NO_THROW(check_json_limits("{\"n\": " + big + "}", "i.json"));  // kAny: left to the reader
      check_json_limits("{\"n\": " + big + "}", "i.json", JsonLimits{true, 0});
      FAIL() << big << " passed";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
      EXPECT_EQ(std::string(e.what()), "i.json: integer " + big + " at byte 6 does not fit in 64 bits (the limit)");
    }
  }
}

TEST(JsonLimits, FloatsAndStringsAreNotIntegers) {
  EXPECT_NO_THROW(check_json_limits("[1e400, 18446744073709551616.0, 1E2, -99999999999999999999.5e-3]", "f.json", JsonLimits{true, 0}));
  EXPECT_NO_THROW(check_json_limits("[\"18446744073709551616\", \"\\\"99999999999999999999\"]", "s.json", JsonLimits{true, 0}));
}

TEST(JsonLimits, ObjectMembersAreCountedPerObject) {
  const auto object = [](int n) {
    std::string s = "{";
    for (int i = 0; i < n; ++i) s += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": \"a:b\"";  // a colon in a string
    return s + "}";
  };
  EXPECT_NO_THROW(check_json_limits(object(20), "o.json", JsonLimits{false, 20}));
  EXPECT_NO_THROW(check_json_limits(object(21), "o.json"));  // no cap by default
  try {
    check_json_limits(object(21), "o.json", JsonLimits{false, 20});
    FAIL() << "21 members passed a cap of 20";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_NE(std::string(e.what()).find("o.json: a JSON object of more than 20 members (the limit), at byte "), std::string::npos)
        << e.what();
  }
  // Members of nested and sibling objects, and array elements, count apart.
  const std::string nested = "{\"a\": " + object(15) + ", \"b\": " + object(15) + ", \"c\": [" + object(20) + ", 1, 2]}";
  EXPECT_NO_THROW(check_json_limits(nested, "n.json", JsonLimits{false, 20}));
  std::string array = "[0";
  for (int i = 1; i < 30; ++i) array += ", " + std::to_string(i);
  EXPECT_NO_THROW(check_json_limits(array + "]", "a.json", JsonLimits{false, 20}));
}

}  // namespace
}  // namespace staticlm
