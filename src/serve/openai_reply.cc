#include "serve/openai_reply.h"

#include <utility>

namespace staticlm {

using ojson = nlohmann::ordered_json;

std::string dump_reply_json(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

ojson usage_json(const ChatJob& job) {
  const auto prompt = static_cast<std::int64_t>(job.prompt.size());
  return {{"prompt_tokens", prompt},
          {"completion_tokens", job.completion_tokens},
          {"total_tokens", prompt + job.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}}};
}

ojson tool_calls_json(const std::vector<ToolCall>& calls, std::size_t first) {
  ojson out = ojson::array();
  for (std::size_t i = first; i < calls.size(); ++i) {
    out.push_back({{"index", i},
                   {"id", "call_" + std::to_string(i)},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments.dump()}}}});
  }
  return out;
}

ojson Reply::base(const char* object) const {
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model}};
}

ojson Reply::chunk(ojson delta, ojson finish) const {
  ojson j = base("chat.completion.chunk");
  j["choices"] = ojson::array({{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}});
  return j;
}

ojson Reply::completion(const ChatJob& job) const {
  ojson j = base("chat.completion");
  ojson message = {{"role", "assistant"}, {"content", job.content}};
  if (!job.tool_calls.empty()) {
    if (job.content.empty()) message["content"] = nullptr;
    message["tool_calls"] = tool_calls_json(job.tool_calls);
  }
  j["choices"] = ojson::array({{{"index", 0}, {"message", message}, {"finish_reason", job.finish_reason}}});
  j["usage"] = usage_json(job);
  j["timings"] = {{"prompt_ms", job.prompt_ms}, {"predicted_ms", job.predicted_ms}};
  return j;
}

}  // namespace staticlm
