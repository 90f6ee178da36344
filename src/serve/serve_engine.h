// The generation side of `staticlm serve`: OpenAI chat requests parsed into token prompts and
// GenerateOptions, a bounded queue in front of one worker thread, and N conversation slots (one
// Runtime, i.e. one KV cache, each) reused LRU as a prompt cache: a request whose tokens extend
// a slot's cached tokens rewinds that slot to the common prefix and prefills only the rest.
//
// Ownership: the engine borrows the Backend, the Checkpoint and the Tokenizer (they must outlive
// it) and owns its runtimes and its worker thread; jobs are shared with the HTTP handlers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "runtime/dry_breakers.h"
#include "runtime/generation.h"
#include "runtime/logprobs.h"
#include "runtime/runtime.h"
#include "runtime/static_input_builder.h"
#include "runtime/static_inputs.h"
#include "staticlm/backend.h"
#include "text/chat_render.h"
#include "text/tokenizer.h"
#include "text/tool_calls.h"

namespace staticlm {

// OpenAI's limit on top_logprobs.
inline constexpr int kMaxTopLogprobs = 20;
// The most alternatives llama.cpp's n_probs may ask for per token (a bound on the reply's size:
// llama.cpp has none, and all 262144 for each token of a long reply would be gigabytes).
inline constexpr int kMaxNProbs = 1024;

// A client error (HTTP 400): the message names the field.
struct RequestError {
  std::string message;
  std::string param;  // the field, "" for the body as a whole
};

// One chat completion. The handler fills the request part; the worker the rest, under `mu`.
struct ChatJob {
  std::vector<std::int64_t> prompt;  // with an image: its soft-token span expanded
  // With an image: the static inputs of the prompt (image span laid out, pixel values), the
  // SHA-256 of the decoded pixels (a slot is reused only for the same image) and where its span
  // ends (a reused prefix must cover it).
  std::shared_ptr<const StaticInputs> image_inputs;
  std::string image_key;
  std::int64_t image_span_end = 0;
  GenerateOptions options;
  bool stream = false;
  bool usage_chunk = false;  // stream_options.include_usage: usage in a chunk of its own, as OpenAI sends it
  bool text_completion = false;  // /v1/completions, /completion: a raw prompt, the reply's text as generated
  bool return_tokens = false;    // /completion's return_tokens: the reply's token ids in the answer
  // A thought channel's text goes to `reasoning` (reasoning_format other than "none"; chat only).
  bool take_reasoning = false;
  bool logprobs = false;  // report each content token's log-probability
  int top_logprobs = 0;   // and this many likeliest alternatives
  std::atomic<bool> cancelled{false};  // set by the handler when the client has gone
  // Set by ServeEngine::shut_down: the job ends at its prompt's next layer or its next token and
  // is answered 503 (error holds why).
  std::atomic<bool> shut_down{false};

  std::mutex mu;
  std::condition_variable cv;
  std::string content;        // the reply so far (special tokens and tool calls left out)
  std::string reasoning;      // with take_reasoning: the reply's thought channel so far
  std::vector<ToolCall> tool_calls;  // the reply's Gemma 4 tool calls so far
  std::size_t released = 0;   // bytes of content safe to show (no partial stop string)
  // With logprobs: one entry per content token, with the size of content once its text was in
  // (a stream sends an entry with the content that covers it).
  struct LogprobEntry {
    TokenLogprob lp;
    std::size_t content_end = 0;
  };
  std::vector<LogprobEntry> logprob_entries;
  bool done = false;
  std::string finish_reason;  // "stop", "length" or "tool_calls" when done
  std::string stopping_word;  // the stop string that ended the reply, if one did
  std::vector<std::int64_t> tokens;  // the reply's token ids when done (the end token included)
  std::string error;          // set when generation failed
  // The failure was the request's (an invalid argument found while generating, as a grammar too
  // ambiguous to follow): HTTP 400, not 500.
  bool request_error = false;
  std::int64_t cached_tokens = 0;
  std::int64_t decode_steps = 0;
  std::int64_t completion_tokens() const { return static_cast<std::int64_t>(tokens.size()); }
  double prompt_ms = 0, predicted_ms = 0;
};

// How a server takes images: `builder` lays out prompts with the runtime config's vision
// profile (null: image parts are refused with `refusal`); local file paths only with
// `allow_local_files`.
struct ImageIntake {
  const StaticInputBuilder* builder = nullptr;
  std::string refusal;
  bool allow_local_files = false;
};

// What a request is parsed against: the checkpoint (its chat template, or `chat_template` when
// given), the tokenizer, the sampling defaults, the slots' max_seq and the image intake.
struct RequestContext {
  std::string model_dir;
  std::string chat_template;  // --chat-template; "" for the checkpoint's own
  const Tokenizer* tokenizer = nullptr;
  GenerateOptions defaults;
  std::int64_t max_seq = 0;
  ImageIntake images;
  // DRY's breaker ids of recent requests (null: each request scans the vocabulary).
  std::shared_ptr<DryBreakerCache> dry_breakers;
  // The chat template parsed once (null: each request finds and parses it).
  std::shared_ptr<const ChatRenderer> renderer;
  // --chat-template-kwargs as "KEY=JSON" (the renderer has them already).
  std::vector<std::string> template_vars;
  // --reasoning-format other than "none": a request without reasoning_format takes thoughts out.
  bool take_reasoning = true;
  // A request without a seed draws a random one (serve without --seed, or --seed -1).
  bool random_seed = false;
};


// Parses an OpenAI chat request body into `job`: the messages (and `tools`) rendered with the
// chat template and tokenized; sampling fields over the defaults. Image parts (`image_url` with
// a data: URL, or a local path / file:// URL under allow_local_files; at most one per
// conversation) are decoded and laid out in the profile's image span. Throws RequestError
// naming the field.
void parse_chat_request(const std::string& body, const RequestContext& context, ChatJob& job);

// Parses an OpenAI text completion request (/v1/completions): `prompt` a string (tokenized as
// given, as `run -p` does) or token ids, no chat template; the same sampling
// fields; `logprobs` an integer (the legacy form). Throws RequestError naming the field.
void parse_completion_request(const std::string& body, const RequestContext& context, ChatJob& job);

// Parses llama.cpp's native completion request (POST /completion): a prompt as
// parse_completion_request takes it; `n_predict` (else `max_tokens`) the reply's length, -1 for
// no limit but the cache; `return_tokens`; the same sampling fields, llama.cpp's names
// included. `n_probs` and OpenAI's `logprobs` are refused (no per-token probabilities in this
// shape). Throws RequestError naming the field.
void parse_llama_completion_request(const std::string& body, const RequestContext& context, ChatJob& job);

// llama.cpp's POST /apply-template: the chat request's messages (and tools) rendered with the
// chat template, as a chat completion would render them -> {"prompt": TEXT}. Throws
// RequestError naming the field.
std::string apply_template_reply(const std::string& body, const RequestContext& context);

// llama.cpp's POST /tokenize: {"content": TEXT, "add_special": false, "with_pieces": false} ->
// {"tokens": [ids]} (with_pieces: [{"id", "piece"}]). POST /detokenize: {"tokens": [ids]} ->
// {"content": TEXT}. Both throw RequestError naming the field.
std::string tokenize_reply(const std::string& body, const Tokenizer& tokenizer);
std::string detokenize_reply(const std::string& body, const Tokenizer& tokenizer);

// llama.cpp's GET /props, what its web UI asks a server first: {"default_generation_settings":
// {"n_ctx": max_seq, "params": the server's sampling defaults}, "total_slots", "model_path",
// "chat_template" (the template's source, "" when the built-in Gemma 4 format is used),
// "modalities": {"vision", "audio": false}}.
std::string props_reply(const RequestContext& context, int slots);

struct ServeOptions {
  int slots = 1;
  int queue = 8;  // requests that may wait while one runs
  ThreadPool* pool = nullptr;  // the runtimes' host threads (RuntimeOptions::pool)
};

class ServeEngine {
 public:
  ServeEngine(Backend& backend, const Checkpoint& ck, const Tokenizer& tok, const ServeOptions& options);
  ~ServeEngine();
  ServeEngine(const ServeEngine&) = delete;
  ServeEngine& operator=(const ServeEngine&) = delete;

  // Queues the job; false (nothing queued) when `queue` requests already wait behind one running,
  // or after shut_down().
  bool submit(std::shared_ptr<ChatJob> job);

  // The server stops (SIGINT / SIGTERM): the running request ends at its prompt's next layer or
  // its next token, the waiting ones without running, each answered 503 as ChatJob::shut_down
  // says; new ones are refused. Returns at once (llama-server stops as promptly).
  void shut_down();
  bool shutting_down();

  // Counts since start, for GET /health and /metrics.
  struct Stats {
    // invalid: failed on the request's own input while generating (ChatJob::request_error).
    std::int64_t completed = 0, cancelled = 0, failed = 0, invalid = 0, rejected = 0, in_flight = 0;
    std::int64_t waiting = 0;  // of in_flight, not yet running
    // Of the requests that generated: prompt tokens prefilled (those reused from a slot's cache
    // aside) and their seconds, tokens generated and the seconds of their decode steps, and
    // model calls (one for each prompt, one per decode step).
    std::int64_t prompt_tokens = 0, predicted_tokens = 0, model_calls = 0;
    double prompt_seconds = 0, predicted_seconds = 0;
    // The same since the last take_metrics() (llama-server's throughput gauges cover that span).
    std::int64_t recent_prompt_tokens = 0, recent_predicted_tokens = 0;
    double recent_prompt_seconds = 0, recent_predicted_seconds = 0;
  };
  Stats stats();
  // stats(), and the recent_ counts start over (GET /metrics).
  Stats take_metrics();

  // Each slot now, for GET /slots: whether it runs the current request, and the tokens its
  // cache holds.
  struct SlotState {
    bool processing = false;
    std::int64_t cached_tokens = 0;
  };
  std::vector<SlotState> slot_states();

 private:
  struct Slot {
    std::unique_ptr<Runtime> runtime;
    std::vector<std::int64_t> tokens;  // what the cache holds: tokens[i] at slot i
    std::string image_key;             // the image in the cache ("" none): tokens alone do not name it
    std::uint64_t last_used = 0;
  };
  void loop();
  void run(ChatJob& job);
  Stats stats_locked() const;  // under mu_

  const Tokenizer& tok_;
  ServeOptions options_;
  std::vector<Slot> slots_;
  std::uint64_t clock_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<ChatJob>> waiting_;
  int in_flight_ = 0;  // waiting + running
  Stats stats_;        // under mu_, in_flight aside
  std::vector<SlotState> slot_states_;  // under mu_: the worker's view of slots_ after each request
  bool stopping_ = false;
  bool shutting_down_ = false;            // under mu_
  std::shared_ptr<ChatJob> running_;      // under mu_: the job run() has
  std::thread worker_;
};

// llama-server's GET /slots: an array of a slot object each ({"id", "id_task", "n_ctx",
// "speculative", "is_processing", "params": the sampling defaults as /props gives them,
// "prompt", "next_token", and "n_cached_tokens": the tokens its cache holds).
std::string slots_reply(const RequestContext& context, const std::vector<ServeEngine::SlotState>& slots);

// llama-server's GET /metrics (with --metrics): its Prometheus counters and gauges
// (llamacpp:prompt_tokens_total, ..., requests_processing, requests_deferred) from the counts.
std::string metrics_reply(const ServeEngine::Stats& stats);

// Error body in OpenAI's shape, with llama-server's HTTP status as "code":
// {"error": {"code", "message", "type", "param"}}.
std::string error_json(int code, const std::string& message, const std::string& type, const std::string& param = "");

// A failed job's answer (job.error set; read under job.mu): 503 unavailable_error when the
// server shut it down, 400 invalid_request_error when the request was at fault, else 500
// server_error. The status and the error body, for a plain reply or a stream's last event.
struct JobFailure {
  int status = 500;
  std::string body;
};
JobFailure job_failure(const ChatJob& job);

}  // namespace staticlm
