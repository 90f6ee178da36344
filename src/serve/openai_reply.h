// The JSON `staticlm serve` answers with, in OpenAI's chat-completion shape (or its text
// completion's, or llama.cpp's native /completion's): a whole completion for a non-streaming
// request, and the chunks of a streamed one (docs/server.md). Formatting only: the HTTP front end
// sends what these return.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/serve_engine.h"
#include "text/tool_calls.h"

namespace staticlm {

// One line of JSON; invalid UTF-8 replaced rather than refused (a reply cut mid-character).
std::string dump_reply_json(const nlohmann::ordered_json& j);

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"} of a finished job.
nlohmann::ordered_json usage_json(const ChatJob& job);

// OpenAI's tool_calls from calls[first..]: arguments as a JSON string; ids unique within the reply.
nlohmann::ordered_json tool_calls_json(const std::vector<ToolCall>& calls, std::size_t first = 0);

// OpenAI's choice.logprobs of entries [from, to) of a job that asked for logprobs:
// {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}.
nlohmann::ordered_json logprobs_json(const std::vector<ChatJob::LogprobEntry>& entries, std::size_t from,
                                     std::size_t to, const Tokenizer& tokenizer);

// The legacy logprobs of a text completion, entries [from, to): {"tokens", "token_logprobs",
// "top_logprobs": [{token: logprob}], "text_offset": code points into `content` where each
// token's text starts}.
nlohmann::ordered_json legacy_logprobs_json(const std::vector<ChatJob::LogprobEntry>& entries, std::size_t from,
                                            std::size_t to, const std::string& content, const Tokenizer& tokenizer);

// llama.cpp's completion_probabilities for entries [from, to): [{"id", "token", "bytes",
// "logprob", "top_logprobs": [{"id", "token", "bytes", "logprob"}]}].
nlohmann::ordered_json llama_probs_json(const std::vector<ChatJob::LogprobEntry>& entries, std::size_t from,
                                        std::size_t to, const Tokenizer& tokenizer);

// A new id: `prefix` and 24 random letters and digits (OpenAI's form, "chatcmpl-...", "call_..."),
// unique across requests and server restarts.
std::string random_id(std::string_view prefix);

// The fields every object of one reply shares.
struct Reply {
  std::string id, model;
  std::int64_t created = 0;
  const Tokenizer* tokenizer = nullptr;  // for the tokens' text in logprobs
  bool text_completion = false;          // /v1/completions: "text_completion" objects with "text"
  bool llama = false;                    // /completion (text_completion too): llama.cpp's native shape
  // stream_options.include_usage: every chunk carries "usage": null but the last, which has it.
  bool usage_null = false;
  nlohmann::ordered_json base(const char* object) const;
  // A "chat.completion.chunk" with one choice carrying `delta` and `finish` (null until the last);
  // for a text completion a "text_completion" whose choice's "text" is the delta's content.
  nlohmann::ordered_json chunk(nlohmann::ordered_json delta, nlohmann::ordered_json finish) const;
  // A job's logprobs for entries [from, to) in this reply's shape (chat or legacy); null
  // when the job did not ask for them.
  nlohmann::ordered_json logprobs(const ChatJob& job, std::size_t from, std::size_t to) const;
  // A content chunk carrying `piece` and, for a job with logprobs, entries [from, to).
  nlohmann::ordered_json content_chunk(const std::string& piece, const ChatJob& job, std::size_t from, std::size_t to) const;
  // The "chat.completion" (or "text_completion") of a finished, successful job: message (text),
  // finish reason, usage, timings. llama: {"content", "stop": true, "model", "tokens_predicted",
  // "tokens_evaluated", "tokens_cached", "stop_type" ("eos", "word" or "limit"), "stopping_word",
  // "truncated", "tokens", "timings", with n_probs "completion_probabilities"}, as llama.cpp's
  // server answers /completion; a stream ends with it, its content "" and no probabilities (the
  // pieces came before, each with its own).
  nlohmann::ordered_json completion(const ChatJob& job) const;
};

}  // namespace staticlm
