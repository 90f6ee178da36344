// The checkpoint's chat template in use: the make-model template rendered by the Jinja engine
// agrees with the built-in Gemma 4 format on the chat-format fixtures; chat-format's template
// lookup, --chat-template, --tools and --var; template errors exit 2 naming file and line; and
// Gemma 4 tool calls parsed back out of generated text.
#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "model/chat_template.h"
#include "test_util.h"
#include "text/chat_format.h"
#include "text/chat_render.h"
#include "text/jinja/template.h"
#include "text/tool_calls.h"

namespace staticlm {
namespace {

using json = nlohmann::ordered_json;
using test::run_staticlm;

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }
std::string q(const std::string& s) { return "'" + s + "'"; }

TEST(ChatTemplate, MakeModelTemplateAndBuiltInFormatAgreeOnTheFixtures) {
  const json cases = json::parse(read_file(test::fixture("text/chat_format_cases.json")));
  ASSERT_GE(cases.size(), 10u);
  const auto t = jinja::Template::parse(gemma4_chat_template(), "chat_template.jinja");
  for (const json& c : cases) {
    json vars = {{"messages", c["messages"]}, {"bos_token", "<bos>"}, {"eos_token", "<eos>"}, {"tools", nullptr},
                 {"add_generation_prompt", c["add_generation_prompt"]}, {"enable_thinking", c["enable_thinking"]}};
    const std::string engine = t->render(vars);
    EXPECT_EQ(engine, c["prompt"].get<std::string>()) << c["messages"].dump();
    ChatOptions o;
    o.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    o.enable_thinking = c["enable_thinking"].get<bool>();
    EXPECT_EQ(render_gemma4_chat(parse_chat_messages_json(c["messages"].dump(), "m.json"), o).text, engine);
  }
}

// The OpenAI tool loop (an assistant turn with `content: null` and tool_calls, then a tool
// message) renders with the template make-model ships; the expected text is jinja2's rendering
// of that template (transformers' settings) for these messages.
TEST(ChatTemplate, MakeModelTemplateTakesNullContent) {
  const auto t = jinja::Template::parse(gemma4_chat_template(), "chat_template.jinja");
  const json messages = json::parse(R"([{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])");
  const json vars = {{"messages", messages}, {"bos_token", "<bos>"}, {"eos_token", "<eos>"}, {"add_generation_prompt", true}};
  EXPECT_EQ(t->render(vars), "<bos><|turn>user\nWeather?<turn|>\n<|turn>model\n<turn|>\n<|turn>tool\nsunny<turn|>\n<|turn>model\n");
}

TEST(ChatTemplate, ChatFormatUsesTheCheckpointTemplateAndPrintsNothingElse) {
  test::TempDir dir;
  write(dir.file("m.json"), R"([{"role": "user", "content": "Hi"}])");
  // A model directory whose chat_template.jinja differs from the built-in format.
  write(dir.file("chat_template.jinja"), "{{ bos_token }}[{% for m in messages %}{{ m.role }}:{{ m.content }}{% endfor %}]{% if add_generation_prompt %}>{% endif %}\n");
  write(dir.file("tokenizer_config.json"), R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}, "chat_template": "ignored"})");
  auto r = run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<s>[user:Hi]>");  // the final newline of the template is dropped (jinja2), nothing added
  r = run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json")) + " --no-generation-prompt --var 'bos_token=\"<B>\"'");
  EXPECT_EQ(r.out, "<B>[user:Hi]");
  // --chat-template overrides; --tools and --var reach the template.
  write(dir.file("t.jinja"), "{{ tools | map(attribute='name') | join(',') }}|{{ enable_thinking }}|{{ n + 1 }}|{{ eos_token }}");
  write(dir.file("tools.json"), R"([{"name": "a"}, {"name": "b"}])");
  r = run_staticlm("chat-format -m " + q(dir.path()) + " --chat-template " + q(dir.file("t.jinja")) + " --messages " +
                   q(dir.file("m.json")) + " --tools " + q(dir.file("tools.json")) + " --var enable_thinking=true --var n=41");
  EXPECT_EQ(r.out, "a,b|True|42|</s>") << r.err;
}

// llama.cpp's spellings: --chat-template-file FILE, and --chat-template given the template's text
// (it names no file and holds "{{" or "{%"); both render what the file renders. --jinja is accepted.
TEST(ChatTemplate, InlineTemplateAndLlamaCppSpellingsRenderAsTheFile) {
  test::TempDir dir;
  write(dir.file("m.json"), R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}])");
  const std::string source = "{% for m in messages %}<{{ m.role }}|{{ m.content | upper }}>{% endfor %}{{ 7 * 6 }}";
  write(dir.file("t.jinja"), source);
  const std::string messages = " --messages " + q(dir.file("m.json"));
  const auto from_file = run_staticlm("chat-format --chat-template " + q(dir.file("t.jinja")) + messages);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(from_file.out, "<user|HI><assistant|YO>42");
  for (const std::string& flags : {"--chat-template-file " + q(dir.file("t.jinja")), "--chat-template " + q(source) + " --jinja",
                                   "--jinja --chat-template=" + q(source)}) {
    const auto r = run_staticlm("chat-format " + flags + messages);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.err;
    EXPECT_EQ(r.out, from_file.out) << flags;
  }
  // Errors name the inline template; a value without template syntax is still a file name.
  const auto bad = run_staticlm("chat-format --chat-template " + q("x\n{{ messages[0].content.a.b }}") + messages);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "error: --chat-template (the template given inline):2: 'str object' has no attribute 'a'\n");
  const auto missing = run_staticlm("chat-format --chat-template-file " + q(dir.file("none.jinja")) + messages);
  EXPECT_EQ(missing.err, "error: --chat-template " + dir.file("none.jinja") + ": no such file\n");
  // A bare word is likely one of llama.cpp's built-in names: the message says what to do instead.
  const auto named = run_staticlm("chat-format --chat-template chatml" + messages);
  EXPECT_EQ(named.exit_code, 2);
  EXPECT_EQ(named.err, "error: --chat-template chatml: no such file (staticlm takes a Jinja template file or its text, not "
                       "llama.cpp's built-in template names; without the flag the checkpoint's own template is used)\n");
  // --chat-template-kwargs JSON: the object's keys as --var's, after them.
  write(dir.file("v.jinja"), "{{ a }}-{{ b | tojson }}-{{ c | default('none') }}");
  const std::string vars = "chat-format --chat-template " + q(dir.file("v.jinja")) + messages;
  const auto kwargs = run_staticlm(vars + " --chat-template-kwargs " + q(R"({"a": "x", "b": [1, {"k": null}]})"));
  EXPECT_EQ(kwargs.out, "x-[1, {\"k\": null}]-none") << kwargs.err;
  const auto both = run_staticlm(vars + " --chat-template-kwargs " + q(R"({"b": 2})") + " --var a=1 --var b=3 --var c=true");
  EXPECT_EQ(both.out, "1-2-True") << both.err;
  const auto not_object = run_staticlm(vars + " --chat-template-kwargs " + q("[1]"));
  EXPECT_EQ(not_object.exit_code, 2);
  EXPECT_EQ(not_object.err, "error: --chat-template-kwargs: expected a JSON object of template variables, got [1]\n");
}

TEST(ChatTemplate, TokenizerConfigTemplateStringAndNamedList) {
  test::TempDir dir;
  write(dir.file("m.json"), R"([{"role": "user", "content": "Q"}])");
  write(dir.file("tokenizer_config.json"), R"({"bos_token": "<s>", "chat_template": "{{ bos_token }}S:{{ messages[0].content }}"})");
  EXPECT_EQ(run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json"))).out, "<s>S:Q");
  write(dir.file("tokenizer_config.json"),
        R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D:{{ messages | length }}"}]})");
  EXPECT_EQ(run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json"))).out, "D:1");
  // As transformers' get_chat_template: with tools (an empty list too) the "tool_use" template
  // renders instead; an explicit --chat-template wins over both.
  write(dir.file("tools.json"), R"([{"type": "function", "function": {"name": "f"}}])");
  write(dir.file("tokenizer_config.json"),
        R"({"chat_template": [{"name": "default", "template": "D"}, {"name": "tool_use", "template": "T:{{ tools[0].function.name }}"}]})");
  const std::string with_tools = "chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json")) + " --tools ";
  EXPECT_EQ(run_staticlm(with_tools + q(dir.file("tools.json"))).out, "T:f");
  write(dir.file("no_tools.json"), "[]");
  EXPECT_EQ(run_staticlm(with_tools + q(dir.file("no_tools.json")) + " --chat-template '{{ 1 }}'").out, "1");
  // The newer layout: chat_template.jinja and additional_chat_templates/tool_use.jinja (the
  // config's list is then not read).
  write(dir.file("chat_template.jinja"), "J");
  EXPECT_EQ(run_staticlm(with_tools + q(dir.file("tools.json"))).out, "J");
  std::filesystem::create_directories(dir.file("additional_chat_templates"));
  write(dir.file("additional_chat_templates/tool_use.jinja"), "JT:{{ tools | length }}");
  EXPECT_EQ(run_staticlm(with_tools + q(dir.file("tools.json"))).out, "JT:1");
  EXPECT_EQ(run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json"))).out, "J");
  // A tool_use template the engine cannot parse fails the renders with tools only.
  write(dir.file("additional_chat_templates/tool_use.jinja"), "{% bogus %}");
  EXPECT_EQ(run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json"))).out, "J");
  const auto broken = run_staticlm(with_tools + q(dir.file("tools.json")));
  EXPECT_EQ(broken.exit_code, 2);
  EXPECT_NE(broken.err.find("tool_use.jinja"), std::string::npos) << broken.err;
  std::filesystem::remove_all(dir.file("additional_chat_templates"));
  std::filesystem::remove(dir.file("chat_template.jinja"));
  // Entries whose name is not the string "default" are other templates, whatever their type.
  write(dir.file("tokenizer_config.json"), R"({"chat_template": [{"name": 5, "template": "x"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json"))).out, "D");
  write(dir.file("tokenizer_config.json"), R"({"chat_template": [{"name": 5, "template": "x"}]})");
  const auto none = run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json")));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("a list of templates without one named \"default\""), std::string::npos) << none.err;
  // What real files hold beside the template: integers past 64 bits (transformers' "no limit",
  // int(1e30)) and thousands of added tokens.
  std::string added = "{";
  for (int i = 0; i < 20000; ++i) added += (i ? ", \"" : "\"") + std::to_string(i) + "\": {\"content\": \"<t" + std::to_string(i) + ">\"}";
  write(dir.file("tokenizer_config.json"), R"({"model_max_length": 1000000000000000019884624838656, "bos_token": "<s>", )"
                                           R"("added_tokens_decoder": )" + added + R"(}, "chat_template": "{{ bos_token }}R"})");
  EXPECT_EQ(run_staticlm("chat-format -m " + q(dir.path()) + " --messages " + q(dir.file("m.json"))).out, "<s>R");
}

// ChatRenderer (what a chat and serve keep) renders every conversation as render_chat does:
// the special tokens, the --var values over the per-render variables (add_generation_prompt
// included), on several threads at once; the template it parsed stays its own when the file
// changes; without a template it renders the built-in format.
TEST(ChatTemplate, ARendererRendersEachConversationAsRenderChat) {
  test::TempDir dir;
  write(dir.file("tokenizer_config.json"), R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}})");
  const std::string tpl = dir.file("t.jinja");
  write(tpl, "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}"
             "{% if add_generation_prompt %}>{{ who }}{% endif %}{{ eos_token }}");
  const std::vector<std::string> vars = {"who=\"bot\"", "add_generation_prompt=false"};
  const ChatRenderer renderer(dir.path(), tpl, vars);
  EXPECT_EQ(renderer.template_name(), tpl);
  std::vector<ChatMessages> conversations(40);
  for (std::size_t i = 0; i < conversations.size(); ++i) {
    for (std::size_t k = 0; k <= i % 5; ++k) {
      conversations[i].messages.push_back({{"role", k % 2 ? "assistant" : "user"}, {"content", std::to_string(i * 10 + k)}});
    }
  }
  std::vector<std::string> got(conversations.size());
  {
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < 2; ++w) {
      threads.emplace_back([&, w] {
        for (std::size_t i = w; i < conversations.size(); i += 2) got[i] = renderer.render(conversations[i], "m").text;
      });
    }
    for (std::thread& t : threads) t.join();
  }
  for (std::size_t i = 0; i < conversations.size(); ++i) {
    ChatRenderRequest r;
    r.model_dir = dir.path();
    r.template_file = tpl;
    r.conversation = conversations[i];
    r.vars = vars;
    EXPECT_EQ(got[i], render_chat(r).text);
  }
  EXPECT_EQ(got[1], "<s>[user:10][assistant:11]</s>");  // the --var turned the generation prompt off
  const ChatRenderer prompted(dir.path(), tpl, {"who=\"bot\""});
  EXPECT_EQ(prompted.render(conversations[0], "m").text, "<s>[user:0]>bot</s>");
  write(tpl, "changed");
  EXPECT_EQ(prompted.render(conversations[0], "m").text, "<s>[user:0]>bot</s>");

  test::TempDir plain;  // no template: the built-in Gemma 4 format
  const ChatRenderer builtin(plain.path(), "", {});
  EXPECT_EQ(builtin.template_name(), "");
  EXPECT_EQ(builtin.render(conversations[0], "m").text, "<bos><|turn>user\n0<turn|>\n<|turn>model\n");
  EXPECT_THROW(ChatRenderer(dir.path(), dir.file("none.jinja"), {}), Error);
  EXPECT_THROW(ChatRenderer(dir.path(), tpl, {"who=bot"}), Error);  // not JSON
}

// enable_thinking of every JSON kind: the built-in format turns thinking on exactly where the
// Gemma 4 template make-model ships does (Jinja's truth: 0, "", [], {} and null are false).
TEST(ChatTemplate, BuiltInFormatReadsEnableThinkingAsTheTemplate) {
  const auto t = jinja::Template::parse(gemma4_chat_template(), "chat_template.jinja");
  ChatMessages conversation;
  conversation.messages = json::parse(R"([{"role": "user", "content": "Hi"}])");
  test::TempDir plain;  // no template: the built-in format
  int on = 0;
  for (const char* value : {"true", "false", "0", "1", "-2.5", "0.0", "\"\"", "\"no\"", "[]", "[0]", "{}", "{\"a\": 1}", "null"}) {
    const json vars = {{"messages", conversation.messages}, {"bos_token", "<bos>"}, {"add_generation_prompt", true},
                       {"enable_thinking", json::parse(value)}};
    const std::string expected = t->render(vars);
    const ChatRenderer builtin(plain.path(), "", {std::string("enable_thinking=") + value});
    EXPECT_EQ(builtin.render(conversation, "m").text, expected) << value;
    EXPECT_EQ(thinking_enabled({std::string("enable_thinking=") + value}), expected.find("<|think|>") != std::string::npos) << value;
    on += expected.find("<|think|>") != std::string::npos;
  }
  EXPECT_EQ(on, 6);  // true, 1, -2.5, "no", [0], {"a": 1}: the template itself tells them apart
}

TEST(ChatTemplate, TemplateErrorsExit2NamingFileAndLine) {
  test::TempDir dir;
  write(dir.file("m.json"), R"([{"role": "user", "content": "Q"}])");
  struct Case {
    std::string source, err;
  };
  const std::vector<Case> cases = {
      {"a\n{{ raise_exception('roles must alternate') }}", ":2: the template raised an error: roles must alternate\n"},
      {"a\nb\n{{ x | no_such_filter }}", ":3: no filter named 'no_such_filter'\n"},
      {"{% if x is frobbed %}{% endif %}", ":1: No test named 'frobbed' found.\n"},  // checked when used, as in jinja2
      {"a\n{% if true %}\nno end", ":3: unexpected end of template: expected 'elif' or 'else' or 'endif'\n"},
      {"{% frob %}", ":1: unknown tag 'frob'\n"},
      {"x\n{{ messages[0].content.a.b }}", ":2: 'str object' has no attribute 'a'\n"},
  };
  for (const Case& c : cases) {
    write(dir.file("t.jinja"), c.source);
    const auto r = run_staticlm("chat-format --chat-template " + q(dir.file("t.jinja")) + " --messages " + q(dir.file("m.json")));
    EXPECT_EQ(r.exit_code, 2) << c.source;
    EXPECT_EQ(r.err, "error: " + dir.file("t.jinja") + c.err) << c.source;
    EXPECT_EQ(r.out, "") << c.source;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--var 'x=<bos>'", "error: --var x=<bos>: the value is not JSON (a string needs quotes: --var x='\"<bos>\"')\n"},
      {"--var =1", "error: --var =1: expected KEY=JSON\n"},
      {"--chat-template " + q(dir.file("none.jinja")), "error: --chat-template " + dir.file("none.jinja") + ": no such file\n"},
      {"--tools " + q(dir.file("bad_tools.json")), "error: " + dir.file("bad_tools.json") + ": tools[0]: expected an object (a tool schema)\n"},
  };
  write(dir.file("bad_tools.json"), R"(["x"])");
  write(dir.file("m.json"), R"(["not a message"])");
  auto r = run_staticlm("chat-format --messages " + q(dir.file("m.json")) + " --chat-template " + q(dir.file("t.jinja")));
  EXPECT_EQ(r.err, "error: " + dir.file("m.json") + ": messages[0]: expected an object with \"role\" and \"content\"\n");
  write(dir.file("m.json"), R"([{"role": "user", "content": "Q"}])");
  for (const auto& [args, err] : bad) {
    r = run_staticlm("chat-format --messages " + q(dir.file("m.json")) + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err, err) << args;
    EXPECT_EQ(r.out, "");
  }
  // Tools without any template: the built-in format cannot render them.
  write(dir.file("tools.json"), R"([{"name": "a"}])");
  r = run_staticlm("chat-format --messages " + q(dir.file("m.json")) + " --tools " + q(dir.file("tools.json")));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("tools need a chat template"), std::string::npos) << r.err;
}

TEST(ToolCalls, ParsesGemma4CallsOutOfGeneratedText) {
  const ModelReply r = parse_gemma4_reply(
      "Let me check.<|tool_call>call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,metric:true,ratio:0.5,"
      "opts:{tags:[<|\"|>a<|\"|>,2],none:null}}<tool_call|> and <|tool_call>call:ping{}<tool_call|>done");
  EXPECT_EQ(r.text, "Let me check. and done");
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments.dump(),
            R"({"city":"Paris, FR","days":3,"metric":true,"ratio":0.5,"opts":{"tags":["a",2],"none":null}})");
  EXPECT_EQ(r.tool_calls[1].name, "ping");
  EXPECT_EQ(r.tool_calls[1].arguments.dump(), "{}");
  EXPECT_EQ(reply_json(r),
            R"({"text":"Let me check. and done","tool_calls":[{"type":"function","function":{"name":"get_weather","arguments":)"
            R"({"city":"Paris, FR","days":3,"metric":true,"ratio":0.5,"opts":{"tags":["a",2],"none":null}}}},)"
            R"({"type":"function","function":{"name":"ping","arguments":{}}}]})");
  // A malformed call stays in the text; text without calls is unchanged.
  const ModelReply bad = parse_gemma4_reply("x<|tool_call>call:f{a:<|\"|>open}<tool_call|>y<|tool_call>unclosed");
  EXPECT_TRUE(bad.tool_calls.empty());
  EXPECT_EQ(bad.text, "x<|tool_call>call:f{a:<|\"|>open}<tool_call|>y<|tool_call>unclosed");
}

TEST(ToolCalls, RoundTripThroughTheGemma4ToolTemplate) {
  // The corpus Gemma 4 tool template writes a call the way the model emits one; parsing the
  // rendered model turn gives the call back.
  const auto t = jinja::Template::parse(read_file(test::fixture("jinja/templates/gemma4_tools.jinja")), "gemma4_tools.jinja");
  const json args = json::parse(R"({"city": "Oslo", "days": 2, "units": ["C", "F"], "exact": false})");
  const json vars = {{"bos_token", ""}, {"add_generation_prompt", false}, {"tools", nullptr},
                     {"messages", json::array({{{"role", "user"}, {"content", "w?"}},
                                               {{"role", "assistant"}, {"content", ""},
                                                {"tool_calls", json::array({{{"type", "function"},
                                                                             {"function", {{"name", "get_weather"}, {"arguments", args}}}}})}}})}};
  const std::string text = t->render(vars);
  const ModelReply r = parse_gemma4_reply(text);
  ASSERT_EQ(r.tool_calls.size(), 1u) << text;
  EXPECT_EQ(r.tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.tool_calls[0].arguments, json::parse(R"({"city": "Oslo", "days": 2, "exact": false, "units": ["C", "F"]})"));
  EXPECT_EQ(r.text, "<|turn>user\nw?<turn|>\n<|turn>model\n<turn|>\n");
}

}  // namespace
}  // namespace staticlm
