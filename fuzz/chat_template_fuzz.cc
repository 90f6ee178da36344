// Chat templates (the Jinja engine): a fuzzed template is parsed and rendered with a
// conversation that has a system prompt, a tool call, a tool result and two tools, as
// apply_chat_template would pass it. Seeds: the published-style templates of
// tests/fixtures/jinja/templates/. Beyond the common rule (only a staticlm::Error may refuse),
// the engine's limits (src/text/jinja/limits.h) must stop every template in bounded time and
// memory: libFuzzer's -timeout and -rss_limit_mb report one that does not.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "text/jinja/template.h"

namespace {

const nlohmann::ordered_json& variables() {
  static const nlohmann::ordered_json v = [] {
    auto j = nlohmann::ordered_json::parse(R"({"messages": [
      {"role": "system", "content": "You can call tools."},
      {"role": "user", "content": "What's the weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
      {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temperature\": 21}"},
      {"role": "assistant", "content": "It is 21 \u00b0C and clear in Paris."},
      {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "And this?"}]}],
     "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}],
     "bos_token": "<bos>", "eos_token": "<eos>", "add_generation_prompt": true, "enable_thinking": true})");
    return j;
  }();
  return v;
}

std::tm fixed_now() {
  std::tm t{};
  t.tm_year = 126;
  t.tm_mday = 1;
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string source = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] {
    const auto t = jinja::Template::parse(source, "chat_template.jinja");
    jinja::RenderOptions o;
    o.now = fixed_now;
    t->render(variables(), o);
  });
  return 0;
}
