// The grammar that forces Gemma 4 tool calls (text/tool_call_grammar.h): the texts it takes are
// calls tool_calls.cc parses back to the tools' names and to arguments valid for their schemas;
// texts outside the schema are refused; random walks the constraint leads end in such calls.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "base/error.h"
#include "text/grammar_constraint.h"
#include "text/grammar_matcher.h"
#include "text_test_util.h"
#include "text/tool_call_grammar.h"
#include "text/tool_calls.h"

namespace staticlm {
namespace {

using ojson = nlohmann::ordered_json;

const ojson kTools = ojson::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
    "parameters": {"type": "object", "properties": {
      "city": {"type": "string"},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
      "days": {"type": "integer"}},
     "required": ["city"]}}},
  {"type": "function", "function": {"name": "set_alarm",
    "parameters": {"type": "object", "properties": {
      "hour": {"type": "integer"}, "loud": {"type": "boolean"},
      "repeat": {"type": "array", "items": {"enum": ["mon", "tue"]}},
      "label": {"type": ["string", "null"]}}}}},
  {"name": "ping"}
])");

std::shared_ptr<const Grammar> grammar_of(const std::string& only, bool parallel, const ojson& tools = kTools) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  return std::make_shared<const Grammar>(
      parse_grammar(gemma4_tool_call_grammar(tools, only, parallel, "tool_choice"), "g", &tok, tok.id_limit()));
}

// Whether the grammar takes the whole text (its special tokens as tokens), as the constraint
// feeds it: each token as its text or as a token element.
bool takes(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const TokenIndex& index = tok.token_index();
  GrammarMatcher m(g);
  for (const int id : tok.encode(text)) {
    GrammarMatcher as_text = m;
    const std::string& b = index.bytes[static_cast<std::size_t>(id)];
    bool ok = !b.empty();
    for (const char c : b) ok = ok && as_text.feed(static_cast<unsigned char>(c));
    const bool as_token = m.feed_token(id);
    if (ok && as_token) m.absorb(as_text);
    if (ok && !as_token) m = as_text;
    if (!ok && !as_token) return false;
  }
  return m.complete();
}

const std::string kQ = "<|\"|>";

TEST(ToolCallGrammar, TakesCallsOfTheSchemasAndParsesBack) {
  const auto any = grammar_of("", true);
  const std::string weather = "<|tool_call>call:get_weather{city:" + kQ + "Paris, France" + kQ + ",unit:" + kQ + "celsius" + kQ +
                              ",days:3}<tool_call|>";
  const std::string alarm = "<|tool_call>call:set_alarm{hour:7,loud:false,repeat:[" + kQ + "mon" + kQ + "," + kQ + "tue" + kQ +
                            "],label:null}<tool_call|>";
  const std::string ping = "<|tool_call>call:ping{}<tool_call|>";
  for (const std::string& text : std::vector<std::string>{weather, alarm, ping, weather + ping, "<|tool_call>call:set_alarm{}<tool_call|>",
                                  "<|tool_call>call:set_alarm{loud:true}<tool_call|>",
                                  "<|tool_call>call:ping{x:" + kQ + "y" + kQ + ",n:{a:[1,-2.5e3]}}<tool_call|>"}) {
    EXPECT_TRUE(takes(any, text)) << text;
    const ModelReply r = parse_gemma4_reply(text);
    EXPECT_EQ(r.text, "") << text;
    EXPECT_FALSE(r.tool_calls.empty()) << text;
  }
  const ModelReply w = parse_gemma4_reply(weather);
  ASSERT_EQ(w.tool_calls.size(), 1u);
  EXPECT_EQ(w.tool_calls[0].name, "get_weather");
  EXPECT_EQ(w.tool_calls[0].arguments, ojson::parse(R"({"city": "Paris, France", "unit": "celsius", "days": 3})"));

  for (const std::string& text : std::vector<std::string>{
           std::string("hello"),                                                           // no call
           "<|tool_call>call:get_time{}<tool_call|>",                                      // not a tool
           "<|tool_call>call:get_weather{}<tool_call|>",                                   // city is required
           "<|tool_call>call:get_weather{unit:" + kQ + "celsius" + kQ + "}<tool_call|>",  // still no city
           "<|tool_call>call:get_weather{city:" + kQ + "Oslo" + kQ + ",unit:" + kQ + "kelvin" + kQ + "}<tool_call|>",  // enum
           "<|tool_call>call:get_weather{city:7}<tool_call|>",                             // a string expected
           "<|tool_call>call:set_alarm{hour:" + kQ + "7" + kQ + "}<tool_call|>",           // an integer expected
           "<|tool_call>call:set_alarm{hour:7.5}<tool_call|>",
           "<|tool_call>call:set_alarm{loud:yes}<tool_call|>",
           "<|tool_call>call:set_alarm{repeat:[" + kQ + "sun" + kQ + "]}<tool_call|>",
           "<|tool_call>call:set_alarm{volume:3}<tool_call|>",                             // not a property
           "<|tool_call>call:set_alarm{loud:true,hour:7}<tool_call|>",                     // out of declared order
           "<|tool_call>call:get_weather{city:" + kQ + "a<b" + kQ + "}<tool_call|>",       // '<' in a string
           "<|tool_call>call:ping{}",                                                      // not closed
           "<|tool_call>call:ping{}<tool_call|> and more"}) {
    EXPECT_FALSE(takes(any, text)) << text;
  }
  // One call only, and one function only.
  EXPECT_FALSE(takes(grammar_of("", false), weather + ping));
  EXPECT_TRUE(takes(grammar_of("", false), weather));
  EXPECT_TRUE(takes(grammar_of("ping", false), ping));
  EXPECT_FALSE(takes(grammar_of("ping", false), weather));
}

TEST(ToolCallGrammar, NoToolOrAnUnknownNameIsRefusedByName) {
  const auto message = [](const ojson& tools, const std::string& only) -> std::string {
    try {
      gemma4_tool_call_grammar(tools, only, true, "tool_choice");
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message(ojson::array(), "").find("tool_choice: forcing a tool call needs tools"), std::string::npos);
  EXPECT_NE(message(ojson::parse(R"([{"type": "function"}])"), "").find("no tool has a function name"), std::string::npos);
  EXPECT_NE(message(kTools, "get_time").find("tool_choice: no tool is named \"get_time\" (the tools: get_weather, set_alarm, ping)"),
            std::string::npos)
      << message(kTools, "get_time");
  // Names and keys that need escaping in GBNF stay literal.
  const ojson odd = ojson::parse(R"([{"name": "say\"hi\\", "parameters": {"properties": {"a\"b": {"type": "boolean"}}, "required": ["a\"b"]}}])");
  const Tokenizer& tok = test::gemma4_tokenizer();
  const auto g = std::make_shared<const Grammar>(parse_grammar(gemma4_tool_call_grammar(odd, "", false, "t"), "g", &tok, tok.id_limit()));
  EXPECT_TRUE(takes(g, "<|tool_call>call:say\"hi\\{a\"b:true}<tool_call|>"));
}

// Integer bounds (minimum / maximum, exclusive ones in both drafts' forms, fractional bounds),
// string lengths in code points, item counts and references within the parameters (pydantic's
// $defs, allOf around one reference, recursion cut at the depth limit): each integer taken iff
// it lies in the range, counted the plain way.
TEST(ToolCallGrammar, BoundsCountsAndReferencesAreFollowed) {
  struct Range {
    const char* schema;
    std::int64_t lo, hi;  // inclusive
  };
  constexpr std::int64_t kNone = 999'999'999'999'999'999;
  const std::vector<Range> ranges = {
      {R"({"type": "integer", "minimum": 1, "maximum": 5})", 1, 5},
      {R"({"type": "integer", "minimum": 0, "maximum": 100})", 0, 100},
      {R"({"type": "integer", "minimum": -10, "maximum": 25})", -10, 25},
      {R"({"type": "integer", "minimum": -300, "maximum": -7})", -300, -7},
      {R"({"type": "integer", "minimum": 17})", 17, kNone},
      {R"({"type": "integer", "maximum": -42})", -kNone, -42},
      {R"({"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 99})", 1, 98},
      {R"({"type": "integer", "minimum": 3, "exclusiveMinimum": true, "maximum": 9.5})", 4, 9},
      {R"({"type": ["integer", "null"], "minimum": 2.5, "maximum": 1099})", 3, 1099},
      {R"({"type": "integer", "minimum": 999, "maximum": 1000001})", 999, 1000001},
      {R"({"type": "integer", "minimum": 123456789, "maximum": 123456987})", 123456789, 123456987},
  };
  std::mt19937_64 rng(5);
  for (const Range& r : ranges) {
    SCOPED_TRACE(r.schema);
    ojson parameters = {{"properties", {{"n", ojson::parse(r.schema)}}}, {"required", ojson::array({"n"})}};
    ojson tools = ojson::array({ojson{{"name", "f"}, {"parameters", parameters}}});
    const auto g = grammar_of("", false, tools);
    std::set<std::int64_t> xs;
    for (std::int64_t x = -150; x <= 150; ++x) xs.insert(x);
    for (const std::int64_t b : {r.lo, r.hi}) {
      if (b == kNone || b == -kNone) continue;
      for (std::int64_t d = -3; d <= 3; ++d) xs.insert(b + d);
    }
    for (int i = 0; i < 60; ++i) {
      const std::int64_t mag = static_cast<std::int64_t>(rng() % 1'000'000'000'000ULL) / (std::int64_t{1} << (rng() % 40));
      xs.insert(rng() % 2 ? mag : -mag);
    }
    for (const std::int64_t x : xs) {
      const bool in = r.lo <= x && x <= r.hi;
      EXPECT_EQ(takes(g, "<|tool_call>call:f{n:" + std::to_string(x) + "}<tool_call|>"), in) << x;
    }
    EXPECT_FALSE(takes(g, "<|tool_call>call:f{n:007}<tool_call|>"));  // no leading zeros
  }

  const ojson tools = ojson::parse(R"([{"name": "f", "parameters": {
    "$defs": {"Unit": {"enum": ["c", "f"]},
              "Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
    "properties": {
      "code": {"type": "string", "minLength": 2, "maxLength": 4},
      "empty": {"type": "string", "maxLength": 0},
      "pair": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1, "maxItems": 2},
      "unit": {"$ref": "#/$defs/Unit"},
      "wrapped": {"allOf": [{"$ref": "#/$defs/Unit"}], "description": "a unit"},
      "tree": {"$ref": "#/$defs/Node"},
      "lost": {"$ref": "#/$defs/Missing"}}}}])");
  const auto g = grammar_of("", false, tools);
  const auto call = [](const std::string& args) { return "<|tool_call>call:f{" + args + "}<tool_call|>"; };
  const auto str = [](const std::string& s) { return kQ + s + kQ; };
  EXPECT_TRUE(takes(g, call("code:" + str("ab"))));
  EXPECT_TRUE(takes(g, call("code:" + str("abcd"))));
  EXPECT_TRUE(takes(g, call("code:" + str("\xC3\xA9\xC3\xA9"))));  // two code points, four bytes
  EXPECT_FALSE(takes(g, call("code:" + str("a"))));
  EXPECT_FALSE(takes(g, call("code:" + str("abcde"))));
  EXPECT_TRUE(takes(g, call("empty:" + str(""))));
  EXPECT_FALSE(takes(g, call("empty:" + str("x"))));
  EXPECT_TRUE(takes(g, call("pair:[3]")));
  EXPECT_TRUE(takes(g, call("pair:[3,0]")));
  EXPECT_FALSE(takes(g, call("pair:[]")));
  EXPECT_FALSE(takes(g, call("pair:[1,2,3]")));
  EXPECT_FALSE(takes(g, call("pair:[-1]")));
  EXPECT_TRUE(takes(g, call("unit:" + str("c") + ",wrapped:" + str("f"))));
  EXPECT_FALSE(takes(g, call("unit:" + str("k"))));
  EXPECT_FALSE(takes(g, call("wrapped:" + str("k"))));
  EXPECT_TRUE(takes(g, call("tree:{kids:[{kids:[]},{}]}")));
  EXPECT_FALSE(takes(g, call("tree:{kids:[{leaves:[]}]}")));
  EXPECT_TRUE(takes(g, call("lost:{any:[1," + str("x") + "]}")));  // an unresolved reference: any value
}

// With thinking on, a forced call may follow one thought (Gemma 4 thinks before it calls);
// without, the reply opens with the call.
TEST(ToolCallGrammar, AThoughtMayComeFirstWhenThinkingIsOn) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const auto thinking = std::make_shared<const Grammar>(
      parse_grammar(gemma4_tool_call_grammar(kTools, "ping", false, "t", /*thought_first=*/true), "g", &tok, tok.id_limit()));
  const std::string ping = "<|tool_call>call:ping{}<tool_call|>";
  const std::string thought = "<|channel>thought\nThe user wants a ping, <b>now</b>.<channel|>";
  EXPECT_TRUE(takes(thinking, thought + ping));
  EXPECT_TRUE(takes(thinking, ping));
  EXPECT_FALSE(takes(thinking, thought));             // a call must follow
  EXPECT_FALSE(takes(thinking, thought + thought + ping));
  EXPECT_FALSE(takes(thinking, "Sure." + ping));      // text is no thought
  EXPECT_FALSE(takes(grammar_of("ping", false), thought + ping));
}

// tool_choice's one meaning (serve, run and the library use it): auto asks nothing; none bans
// the call-opening token; required forces calls of any tool; a name calls of that tool, as many
// as `parallel` allows. A function named like a mode is reached through serve's object form.
TEST(ToolChoice, EachChoiceGivesItsConstraint) {
  const ToolChoiceConstraint automatic = tool_choice_constraint(kTools, tool_choice_from_text("auto"), true, "t");
  EXPECT_EQ(automatic.grammar, "");
  EXPECT_FALSE(automatic.ban_call_open);
  const ToolChoiceConstraint none = tool_choice_constraint(kTools, tool_choice_from_text("none"), true, "t");
  EXPECT_EQ(none.grammar, "");
  EXPECT_TRUE(none.ban_call_open);
  const std::string ping = "<|tool_call>call:ping{}<tool_call|>";
  const std::string weather = "<|tool_call>call:get_weather{city:" + kQ + "Rome" + kQ + "}<tool_call|>";
  const Tokenizer& tok = test::gemma4_tokenizer();
  const auto grammar = [&](const std::string& choice, bool parallel) {
    const ToolChoiceConstraint c = tool_choice_constraint(kTools, tool_choice_from_text(choice), parallel, "t");
    EXPECT_FALSE(c.ban_call_open) << choice;
    return std::make_shared<const Grammar>(parse_grammar(c.grammar, "g", &tok, tok.id_limit()));
  };
  EXPECT_TRUE(takes(grammar("required", true), weather + ping));
  EXPECT_FALSE(takes(grammar("required", false), weather + ping));
  EXPECT_TRUE(takes(grammar("required", false), weather));
  EXPECT_TRUE(takes(grammar("ping", true), ping + ping));
  EXPECT_FALSE(takes(grammar("ping", true), weather));
  const ojson mode_named = ojson::parse(R"([{"name": "none"}, {"name": "x"}])");
  const ToolChoiceConstraint named =
      tool_choice_constraint(mode_named, {ToolChoice::Mode::kFunction, "none"}, false, "t");
  EXPECT_FALSE(named.ban_call_open);
  EXPECT_TRUE(takes(std::make_shared<const Grammar>(parse_grammar(named.grammar, "g", &tok, tok.id_limit())),
                    "<|tool_call>call:none{}<tool_call|>"));
  // An empty name is no function (before, run took it as "required").
  try {
    tool_choice_constraint(kTools, tool_choice_from_text(""), true, "--tool-choice");
    ADD_FAILURE() << "an empty tool_choice was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tool-choice: expected the name of one of the tools"), std::string::npos) << e.what();
  }
}

// The grammar grows with the schema, not faster: 2000 optional properties (each pair of them
// in order is allowed) and a type list repeating "object" 2000 times over them.
TEST(ToolCallGrammar, LargeSchemasGiveLinearGrammars) {
  ojson props = ojson::object();
  for (int i = 0; i < 2000; ++i) props[std::string("p").append(std::to_string(i))] = {{"type", "boolean"}};
  ojson types = ojson::array();
  for (int i = 0; i < 2000; ++i) types.push_back("object");
  const ojson tools = {{{"name", "big"}, {"parameters", {{"type", types}, {"properties", props}}}}};
  const std::string text = gemma4_tool_call_grammar(tools, "", false, "t");
  EXPECT_LT(text.size(), 400'000u);
  const Tokenizer& tok = test::gemma4_tokenizer();
  const auto g = std::make_shared<const Grammar>(parse_grammar(text, "g", &tok, tok.id_limit()));
  EXPECT_TRUE(takes(g, "<|tool_call>call:big{p5:true,p1999:false}<tool_call|>"));
  EXPECT_TRUE(takes(g, "<|tool_call>call:big{p1999:true}<tool_call|>"));
  EXPECT_TRUE(takes(g, "<|tool_call>call:big{}<tool_call|>"));
  EXPECT_FALSE(takes(g, "<|tool_call>call:big{p1999:true,p5:false}<tool_call|>"));
  EXPECT_FALSE(takes(g, "<|tool_call>call:big{p5:true,p5:false}<tool_call|>"));
}

// Walks the constraint leads, a random allowed token at each step (end tokens when allowed, so the
// walk stops where the grammar may): every walk ends in calls whose arguments fit the schemas.
TEST(ToolCallGrammar, RandomWalksEndInValidCalls) {
  const Tokenizer& tok = test::gemma4_tokenizer();
  const TokenIndex& index = tok.token_index();
  const std::int64_t vocab = tok.id_limit();
  // No free strings or untyped values: a uniform walk inside those would rarely close them.
  const ojson tools = ojson::parse(R"([
    {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object", "properties": {
      "hour": {"type": "integer"}, "loud": {"type": "boolean"},
      "repeat": {"type": "array", "items": {"enum": ["mon", "tue"]}}, "tone": {"const": "beep"}},
      "required": ["hour"]}}},
    {"type": "function", "function": {"name": "stop", "parameters": {"type": "object", "properties": {
      "now": {"enum": [true, 2, null]}}}}}])");
  const auto g = std::make_shared<const Grammar>(parse_grammar(gemma4_tool_call_grammar(tools, "", true, "t"), "g", &tok, vocab));
  const std::int64_t end = 106;
  std::mt19937 rng(7);
  std::set<std::string> names;
  for (int walk = 0; walk < 24; ++walk) {
    GrammarConstraint c(g, index, {end});
    std::string text;
    std::vector<std::uint8_t> allowed;
    bool ended = false;
    for (int step = 0; step < 400 && !ended && !c.done(); ++step) {
      c.allowed(vocab, allowed);
      std::vector<std::int64_t> ids;
      for (std::int64_t t = 0; t < vocab; ++t) {
        if (allowed[static_cast<std::size_t>(t)]) ids.push_back(t);
      }
      ASSERT_FALSE(ids.empty()) << text;
      if (allowed[end] && rng() % 2 == 0) {
        ended = true;
        break;
      }
      const std::int64_t t = ids[rng() % ids.size()];
      if (t == end) continue;
      c.accept(t);
      text += index.bytes[static_cast<std::size_t>(t)];
    }
    ASSERT_TRUE(ended || c.done()) << "walk " << walk << " did not end: " << text;
    const ModelReply r = parse_gemma4_reply(text);
    EXPECT_EQ(r.text, "") << text;
    ASSERT_FALSE(r.tool_calls.empty()) << text;
    for (const ToolCall& call : r.tool_calls) {
      names.insert(call.name);
      const ojson& a = call.arguments;
      if (call.name == "set_alarm") {
        ASSERT_TRUE(a.contains("hour")) << text;
        EXPECT_TRUE(a["hour"].is_number_integer()) << text;
        if (a.contains("loud")) {
          EXPECT_TRUE(a["loud"].is_boolean()) << text;
        }
        if (a.contains("repeat")) {
          for (const ojson& d : a["repeat"]) EXPECT_TRUE(d == "mon" || d == "tue") << text;
        }
        if (a.contains("tone")) {
          EXPECT_EQ(a["tone"], "beep") << text;
        }
        for (const auto& [key, v] : a.items()) EXPECT_TRUE(key == "hour" || key == "loud" || key == "repeat" || key == "tone") << text;
      } else {
        ASSERT_EQ(call.name, "stop") << text;
        for (const auto& [key, v] : a.items()) {
          EXPECT_EQ(key, "now") << text;
          EXPECT_TRUE(v == true || v == 2 || v.is_null()) << text;
        }
      }
    }
  }
  EXPECT_EQ(names.size(), 2u);  // both tools were called in some walk
}

}  // namespace
}  // namespace staticlm
