#include "text/json_constraint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "test_util.h"
#include "text_test_util.h"
#include "text/thought_first_constraint.h"
#include "text/tokenizer.h"

namespace staticlm {
namespace {

// The mask computed two ways after `prefix` (fed as the tokens it encodes to): the constraint's
// walk over the sorted vocabulary, and every token's bytes fed one by one to a copy of a matcher.
void expect_same_mask(const std::string& schema_text, const std::string& prefix) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const TokenIndex& index = tok.token_index();
  auto schema = std::make_shared<const JsonSchema>(JsonSchema::parse(schema_text, "json_schema"));
  const std::vector<std::int64_t> ends = {1, 106};
  JsonConstraint c(schema, index, ends);
  JsonMatcher m(*schema);
  for (int id : tok.encode(prefix)) {
    c.accept(id);
    for (char b : index.bytes[static_cast<std::size_t>(id)]) ASSERT_TRUE(m.feed(static_cast<unsigned char>(b))) << prefix;
  }
  const std::int64_t vocab = tok.id_limit();
  std::vector<std::uint8_t> fast;
  c.allowed(vocab, fast);
  std::vector<std::uint8_t> slow(static_cast<std::size_t>(vocab), 0);
  std::int64_t count = 0;
  for (std::int64_t id = 0; id < vocab; ++id) {
    const std::string& b = index.bytes[static_cast<std::size_t>(id)];
    bool ok = !b.empty();
    JsonMatcher copy = m;
    for (std::size_t i = 0; ok && i < b.size(); ++i) ok = copy.feed(static_cast<unsigned char>(b[i]));
    if (id == 1 || id == 106) ok = m.complete();
    slow[static_cast<std::size_t>(id)] = ok;
    count += ok;
  }
  EXPECT_GT(count, 0) << prefix;
  for (std::int64_t id = 0; id < vocab; ++id) {
    if (fast[static_cast<std::size_t>(id)] != slow[static_cast<std::size_t>(id)]) {
      ADD_FAILURE() << schema_text << " after '" << prefix << "': token " << id << " '" << index.bytes[static_cast<std::size_t>(id)]
                    << "' walk " << int(fast[static_cast<std::size_t>(id)]) << ", one by one " << int(slow[static_cast<std::size_t>(id)]);
      return;
    }
  }
}

TEST(JsonConstraint, VocabularyWalkEqualsTokenByToken) {
  const std::string person = R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
      "nick": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"enum": ["red", "re", "blue"]}}},
      "required": ["name", "age"], "additionalProperties": false})";
  for (const char* prefix : {"", "{", "{\"", "{\"n", "{\"name\": \"Al", "{\"name\": \"Alice", "{\"name\": \"x\", \"age\": 4",
                             "{\"name\": \"x\", \"age\": 4, \"tags\": [\"re", "{\"name\": \"x\", \"nick\": \"Bo \\u00e",
                             "{\"name\": \"x\", \"age\": 4, \"nick\": \"y\", \"tags\": []"}) {
    expect_same_mask(person, prefix);
  }
  for (const char* prefix : {"", "[", "[1.5e", "{\"k\": [true, \"caf\xc3\xa9", "\"a", "12"}) expect_same_mask("{}", prefix);
  // Overlapping anyOf branches followed side by side.
  const std::string pets = R"({"anyOf": [{"type": "object", "properties": {"kind": {"const": "cat"}, "lives": {"type": "integer"}},
      "required": ["kind", "lives"], "additionalProperties": false}, {"type": "object", "properties": {"kind": {"const": "dog"},
      "name": {"type": "string", "maxLength": 5}}, "required": ["kind"]}]})";
  for (const char* prefix : {"", "{\"kind\": \"", "{\"kind\": \"dog\", \"name\": \"Re", "{\"kind\": \"cat\", \"li"}) {
    expect_same_mask(pets, prefix);
  }
  // A pattern checks every character (no token passes unfed); \u escapes are not taken.
  for (const char* prefix : {"", "\"", "\"ab", "\"ab-1", "\"ab-12"}) {
    expect_same_mask(R"({"type": "string", "pattern": "^[a-z]+-\\d{2}$", "maxLength": 6})", prefix);
  }
}

TEST(JsonConstraint, CompleteValueAllowsOnlyTheEnd) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  auto schema = std::make_shared<const JsonSchema>(JsonSchema::parse(R"({"type": "boolean"})", "json_schema"));
  JsonConstraint c(schema, tok.token_index(), {1, 106});
  for (int id : tok.encode("true")) c.accept(id);
  std::vector<std::uint8_t> allowed;
  c.allowed(tok.id_limit(), allowed);
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < allowed.size(); ++i) {
    if (allowed[i]) ids.push_back(static_cast<std::int64_t>(i));
  }
  EXPECT_EQ(ids, (std::vector<std::int64_t>{1, 106}));
  EXPECT_THROW(c.accept(tok.encode("x")[0]), Error);
}

// A thought may come first: the masks, step by step, against a plain JsonConstraint fed the
// same tokens (the thought's left out).
TEST(ThoughtFirstConstraint, AThoughtThenTheValueOrTheValueAlone) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  auto schema = std::make_shared<const JsonSchema>(JsonSchema::parse(R"({"type": "array", "items": {"type": "integer"}})", "json_schema"));
  const std::vector<std::int64_t> ends = {1, 106};
  const auto factory = thought_first_factory(json_constraint_factory(schema, tok, ends), tok, ends);
  const std::int64_t vocab = tok.id_limit(), open = tok.token_to_id("<|channel>"), close = tok.token_to_id("<channel|>");
  ASSERT_GE(open, 0);
  ASSERT_GE(close, 0);
  const auto mask = [&](TokenConstraint& c) {
    std::vector<std::uint8_t> m;
    c.allowed(vocab, m);
    return m;
  };
  const std::vector<int> value = tok.encode("[1, 22]");
  for (const bool think : {true, false}) {
    std::unique_ptr<TokenConstraint> c = factory();
    JsonConstraint plain(schema, tok.token_index(), ends);
    std::vector<std::uint8_t> expected = mask(plain);
    EXPECT_EQ(expected[static_cast<std::size_t>(open)], 0);
    expected[static_cast<std::size_t>(open)] = 1;
    EXPECT_EQ(mask(*c), expected);  // the value's first tokens, or the thought
    if (think) {
      c->accept(open);
      for (const int id : tok.encode("thought\nTwo numbers. {\"no\": [")) {
        const std::vector<std::uint8_t> m = mask(*c);
        EXPECT_EQ(std::count(m.begin(), m.end(), 0), 3);  // the ends and another opening
        EXPECT_EQ(m[1] + m[106] + m[static_cast<std::size_t>(open)], 0);
        c->accept(id);
        EXPECT_FALSE(c->done());
      }
      c->accept(close);
    }
    for (const int id : value) {
      if (think || id != value[0]) {  // (the first without a thought: above)
        EXPECT_EQ(mask(*c), mask(plain)) << think;
      }
      ASSERT_TRUE(mask(*c)[static_cast<std::size_t>(id)]);
      c->accept(id);
      plain.accept(id);
    }
    EXPECT_TRUE(c->done());
    EXPECT_EQ(mask(*c), mask(plain));  // only the ends
  }
}

}  // namespace
}  // namespace staticlm
