// The JSON Schema matcher against Python's jsonschema (tools/json_schema_reference.py): every value
// it takes whole is one jsonschema validates, and every value a random walk of it writes for a
// schema it compiles is too, with no walk stopping on a prefix no byte continues. The matcher is
// allowed to refuse valid values (it writes one spelling: 2 and not 2.0, enum values compact).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "test_util.h"
#include "text/json_matcher.h"
#include "text/json_schema.h"

namespace staticlm {
namespace {

using json = nlohmann::json;

struct SchemaCase {
  json schema;
  std::string value;
  bool valid = false;
};

std::vector<SchemaCase> reference_cases() {
  std::ifstream f(test::fixture("json_schema/cases.jsonl"));
  std::vector<SchemaCase> out;
  for (std::string line; std::getline(f, line);) {
    const json c = json::parse(line);
    out.push_back({c.at("schema"), c.at("value").get<std::string>(), c.at("valid").get<bool>()});
  }
  return out;
}

bool takes_whole(const JsonSchema& s, const std::string& text) {
  JsonMatcher m(s);
  for (unsigned char c : text) {
    if (!m.feed(c)) return false;
  }
  return m.complete();
}

TEST(JsonSchemaReference, MatcherTakesOnlyWhatJsonschemaValidates) {
  const std::vector<SchemaCase> cases = reference_cases();
  ASSERT_GE(cases.size(), 3000u);
  std::size_t compiled = 0, valid = 0, taken = 0;
  for (const SchemaCase& c : cases) {
    std::optional<JsonSchema> s;
    try {
      s = JsonSchema::parse(c.schema.dump(), "json_schema");
    } catch (const Error&) {
      continue;  // refused by name: what it refuses is tested in json_matcher_test.cc
    }
    ++compiled;
    valid += c.valid;
    const bool took = takes_whole(*s, c.value);
    taken += took && c.valid;
    if (took) {
      EXPECT_TRUE(c.valid) << "took an invalid value: " << c.value << " for " << c.schema.dump();
    }
  }
  // Most schemas compile, and the matcher takes most valid values (those it refuses are other
  // spellings of what it writes).
  EXPECT_GE(compiled, cases.size() * 4 / 5);
  EXPECT_GE(taken, valid * 3 / 4) << taken << " of " << valid;
}

// Random walks: bytes picked among those the matcher takes, stopping at random once whole (one
// chance in 8 at each byte, so objects and arrays grow to their limits).
TEST(JsonSchemaLiveReference, RandomWalksWriteValuesJsonschemaValidates) {
  const std::vector<SchemaCase> cases = reference_cases();
  test::TempDir dir;
  const std::string walks = dir.file("walks.jsonl");
  std::ofstream out(walks);
  std::uint32_t rng = 2026;
  const auto next = [&rng] { return rng = rng * 1664525u + 1013904223u; };
  std::size_t n = 0;
  for (std::size_t i = 0; i < cases.size(); i += 6) {  // each schema once
    std::optional<JsonSchema> s;
    try {
      s = JsonSchema::parse(cases[i].schema.dump(), "json_schema");
    } catch (const Error&) {
      continue;
    }
    for (int w = 0; w < 4; ++w) {
      JsonMatcher m(*s);
      std::string text;
      for (int step = 0; step < 300; ++step) {
        std::vector<unsigned char> can;
        for (int b = 0; b < 256; ++b) {
          JsonMatcher t = m;
          if (t.feed(static_cast<unsigned char>(b))) can.push_back(static_cast<unsigned char>(b));
        }
        if (can.empty()) break;
        if (m.complete() && next() % 8 == 0) break;
        const unsigned char b = can[next() % can.size()];
        m.feed(b);
        text.push_back(static_cast<char>(b));
      }
      if (!m.complete()) {
        // Either the step limit (a long value) or a dead end; the latter is a failure.
        bool goes_on = false;
        for (int b = 0; b < 256 && !goes_on; ++b) goes_on = JsonMatcher(m).feed(static_cast<unsigned char>(b));
        EXPECT_TRUE(goes_on) << "a dead end after " << text << " for " << cases[i].schema.dump();
        continue;
      }
      out << json{{"schema", cases[i].schema}, {"value", text}}.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      ++n;
    }
  }
  out.close();
  ASSERT_GE(n, 1000u);
  const test::CommandResult r = test::run_command("/usr/bin/python3 " + test::fixture("../../tools/json_schema_reference.py") +
                                                  " --validate " + walks);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream verdicts(r.out);
  std::ifstream written(walks);
  std::string verdict, line;
  std::size_t checked = 0;
  while (std::getline(verdicts, verdict) && std::getline(written, line)) {
    ++checked;
    EXPECT_EQ(verdict, "1") << "jsonschema refuses what the matcher wrote: " << line;
  }
  EXPECT_EQ(checked, n);
}

// The committed verdicts are what the installed jsonschema gives.
TEST(JsonSchemaLiveReference, PythonJsonschemaGivesTheCommittedVerdicts) {
  const test::CommandResult r = test::run_command("/usr/bin/python3 " + test::fixture("../../tools/json_schema_reference.py") + " --check");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("cases.jsonl matches jsonschema"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace staticlm
