#include "staticlm/tools.h"

#include <nlohmann/json.hpp>

#include "api/guarded.h"
#include "base/error.h"
#include "text/tool_call_grammar.h"
#include "text/tool_calls.h"

namespace staticlm::api {

std::string tool_call_grammar(const std::string& tools_json, const std::string& tool_choice, bool parallel) {
  return guarded([&] {
    const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
    if (tools.is_discarded() || !tools.is_array()) invalid_argument("tools: expected a JSON array of tool schemas");
    const ToolChoiceConstraint c = tool_choice_constraint(tools, tool_choice_from_text(tool_choice), parallel, "tool_choice");
    if (c.grammar.empty()) {
      invalid_argument("tool_choice \"" + tool_choice + "\": a grammar forces calls; give \"required\" or a function's name");
    }
    return c.grammar;
  });
}

ParsedReply parse_tool_calls(const std::string& text) {
  return guarded([&] {
    const ModelReply r = parse_gemma4_reply(text);
    ParsedReply out;
    out.text = r.text;
    out.reasoning = r.reasoning;
    for (const ToolCall& c : r.tool_calls) {
      out.tool_calls.push_back({c.name, c.arguments.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)});
    }
    return out;
  });
}

}  // namespace staticlm::api
