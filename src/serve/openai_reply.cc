#include "serve/openai_reply.h"

#include <algorithm>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <utility>

namespace staticlm {

using ojson = nlohmann::ordered_json;

std::string random_id(std::string_view prefix) {
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 bits{(static_cast<std::uint64_t>(std::random_device{}()) << 32) | std::random_device{}()};
  std::string id(prefix);
  for (int i = 0; i < 24; ++i) id += kChars[bits() % (sizeof kChars - 1)];
  return id;
}

std::string dump_reply_json(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

ojson usage_json(const ChatJob& job) {
  const auto prompt = static_cast<std::int64_t>(job.prompt.size());
  return {{"prompt_tokens", prompt},
          {"completion_tokens", job.completion_tokens()},
          {"total_tokens", prompt + job.completion_tokens()},
          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}}};
}

ojson tool_calls_json(const std::vector<ToolCall>& calls, std::size_t first) {
  ojson out = ojson::array();
  for (std::size_t i = first; i < calls.size(); ++i) {
    out.push_back({{"index", i},
                   {"id", random_id("call_")},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments.dump()}}}});
  }
  return out;
}

namespace {

// A token's text and its bytes: a byte-fallback token (<0xHH>) is its one byte (its text alone
// is not UTF-8; OpenAI's `bytes` exist for this), any other the bytes of its decoded text.
ojson token_json(std::int64_t id, double logprob, const Tokenizer& tok) {
  const int i = static_cast<int>(id);
  std::string text = tok.decode(std::span<const int>(&i, 1));
  ojson bytes = ojson::array();
  for (const unsigned char c : tok.token_bytes(i)) bytes.push_back(c);
  return {{"token", std::move(text)}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

}  // namespace

ojson logprobs_json(const std::vector<ChatJob::LogprobEntry>& entries, std::size_t from, std::size_t to,
                    const Tokenizer& tok) {
  ojson content = ojson::array();
  for (std::size_t k = from; k < to && k < entries.size(); ++k) {
    const TokenLogprob& lp = entries[k].lp;
    ojson e = token_json(lp.token, lp.logprob, tok);
    ojson top = ojson::array();
    for (const auto& [id, logprob] : lp.top) top.push_back(token_json(id, logprob, tok));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

ojson llama_probs_json(const std::vector<ChatJob::LogprobEntry>& entries, std::size_t from, std::size_t to,
                       const Tokenizer& tok) {
  const auto entry = [&](std::int64_t id, double logprob) {
    ojson t = token_json(id, logprob, tok);
    return ojson{{"id", id}, {"token", std::move(t["token"])}, {"bytes", std::move(t["bytes"])}, {"logprob", logprob}};
  };
  ojson out = ojson::array();
  for (std::size_t k = from; k < to && k < entries.size(); ++k) {
    const TokenLogprob& lp = entries[k].lp;
    ojson e = entry(lp.token, lp.logprob);
    ojson top = ojson::array();
    for (const auto& [id, logprob] : lp.top) top.push_back(entry(id, logprob));
    e["top_logprobs"] = std::move(top);
    out.push_back(std::move(e));
  }
  return out;
}

ojson legacy_logprobs_json(const std::vector<ChatJob::LogprobEntry>& entries, std::size_t from, std::size_t to,
                           const std::string& content, const Tokenizer& tok) {
  ojson tokens = ojson::array(), logprobs = ojson::array(), tops = ojson::array(), offsets = ojson::array();
  std::size_t byte = 0, code_points = 0;  // where the counting stands in `content`
  for (std::size_t k = from; k < to && k < entries.size(); ++k) {
    const TokenLogprob& lp = entries[k].lp;
    // A token's text starts where the previous token's ended.
    const std::size_t start = std::min(k == 0 ? 0 : entries[k - 1].content_end, content.size());
    for (; byte < start; ++byte) code_points += (static_cast<unsigned char>(content[byte]) & 0xC0) != 0x80;
    const ojson t = token_json(lp.token, lp.logprob, tok);
    tokens.push_back(t["token"]);
    logprobs.push_back(lp.logprob);
    ojson top = ojson::object();
    for (const auto& [id, logprob] : lp.top) {
      const std::string text = token_json(id, logprob, tok)["token"];
      if (!top.contains(text)) top[text] = logprob;  // two ids with one text: the likelier one
    }
    tops.push_back(std::move(top));
    offsets.push_back(code_points);
  }
  return {{"tokens", std::move(tokens)}, {"token_logprobs", std::move(logprobs)}, {"top_logprobs", std::move(tops)},
          {"text_offset", std::move(offsets)}};
}

ojson Reply::base(const char* object) const {
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model}};
}

ojson Reply::chunk(ojson delta, ojson finish) const {
  if (text_completion) {
    ojson j = base("text_completion");
    const std::string text = delta.contains("content") ? delta["content"].get<std::string>() : "";
    j["choices"] = ojson::array({{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", std::move(finish)}}});
    if (usage_null) j["usage"] = nullptr;
    return j;
  }
  ojson j = base("chat.completion.chunk");
  j["choices"] = ojson::array(
      {{{"index", 0}, {"delta", std::move(delta)}, {"logprobs", nullptr}, {"finish_reason", std::move(finish)}}});
  if (usage_null) j["usage"] = nullptr;
  return j;
}

ojson Reply::logprobs(const ChatJob& job, std::size_t from, std::size_t to) const {
  if (!job.logprobs) return nullptr;
  return text_completion ? legacy_logprobs_json(job.logprob_entries, from, to, job.content, *tokenizer)
                         : logprobs_json(job.logprob_entries, from, to, *tokenizer);
}

ojson Reply::content_chunk(const std::string& piece, const ChatJob& job, std::size_t from, std::size_t to) const {
  if (llama) {
    ojson j = {{"content", piece}, {"stop", false}};
    if (job.logprobs) j["completion_probabilities"] = llama_probs_json(job.logprob_entries, from, to, *tokenizer);
    return j;
  }
  ojson j = chunk({{"content", piece}}, nullptr);
  if (job.logprobs) j["choices"][0]["logprobs"] = logprobs(job, from, to);
  return j;
}

ojson Reply::completion(const ChatJob& job) const {
  if (llama) {
    // llama.cpp's stop types: an end token, a stop string, or the length (n_predict or a full cache).
    const char* stop_type = job.finish_reason != "stop" ? "limit" : job.stopping_word.empty() ? "eos" : "word";
    ojson j = {{"content", job.content},
               {"stop", true},
               {"model", model},
               {"tokens_predicted", job.completion_tokens()},
               {"tokens_evaluated", static_cast<std::int64_t>(job.prompt.size())},
               {"tokens_cached", job.cached_tokens},
               {"stop_type", stop_type},
               {"stopping_word", job.stopping_word},
               {"truncated", false},
               {"tokens", job.return_tokens ? ojson(job.tokens) : ojson::array()},
               {"timings", {{"prompt_n", static_cast<std::int64_t>(job.prompt.size()) - job.cached_tokens},
                            {"prompt_ms", job.prompt_ms},
                            {"predicted_n", job.completion_tokens()},
                            {"predicted_ms", job.predicted_ms}}}};
    if (job.logprobs) j["completion_probabilities"] = llama_probs_json(job.logprob_entries, 0, job.logprob_entries.size(), *tokenizer);
    return j;
  }
  const std::size_t n = job.logprob_entries.size();
  ojson j = base(text_completion ? "text_completion" : "chat.completion");
  ojson choice = {{"index", 0}};
  if (text_completion) {
    choice["text"] = job.content;
  } else {
    ojson message = {{"role", "assistant"}, {"content", job.content}};
    // The thought channel, as llama.cpp and vLLM answer it (only when there was one).
    if (!job.reasoning.empty()) message["reasoning_content"] = job.reasoning;
    if (!job.tool_calls.empty()) {
      if (job.content.empty()) message["content"] = nullptr;
      message["tool_calls"] = tool_calls_json(job.tool_calls);
    }
    choice["message"] = std::move(message);
  }
  choice["logprobs"] = logprobs(job, 0, n);
  choice["finish_reason"] = job.finish_reason;
  j["choices"] = ojson::array({std::move(choice)});
  j["usage"] = usage_json(job);
  j["timings"] = {{"prompt_ms", job.prompt_ms}, {"predicted_ms", job.predicted_ms}};
  return j;
}

}  // namespace staticlm
