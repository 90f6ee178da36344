// staticlm serve -m DIR [--host 127.0.0.1] [--port 8080] [--slots N] [--queue N] [--max-seq S]
// [--threads N] [--max-body BYTES] [--allow-local-files] [--config F] [--set k=v]... [sampling
// flags as defaults: -n, --temp, --top-k, --top-p, --min-p, --repetition-penalty, --seed, --stop]
// [--backend cpu|plugin:PATH.so[:k=v,...]] [--fallback none|cpu]
//
// An OpenAI-compatible HTTP server (cpp-httplib) over the runtime: GET /health, GET /v1/models,
// POST /v1/chat/completions (non-streaming, or streaming as server-sent events ending with
// "data: [DONE]"). One worker runs the requests one at a time over N conversation slots that
// act as an LRU prompt cache (serve/serve_engine.h, set up by api/serve_host.h); beyond one
// running and --queue waiting requests, 503. Bad JSON or fields: 400 naming the field; a body
// over --max-body: 413. --port 0 picks a free port. The first line on stdout says where it
// listens. This file holds the flags and the HTTP routes; replies are formatted by
// serve/openai_reply.h.
#include <malloc.h>
#include <signal.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STATICLM_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define STATICLM_ASAN 1
#endif
#ifdef STATICLM_ASAN
#include <sanitizer/allocator_interface.h>
#endif

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/serve_host.h"
#include "api_keys.h"
#include "backend_option.h"
#include "base/error.h"
#include "commands.h"
#include "count_list.h"
#include "llama_cpp_flags.h"
#include "peer_watch.h"
#include "profile_option.h"
#include "sampling_flags.h"
#include "serve/openai_reply.h"
#include "serve/serve_engine.h"
#include "threads_option.h"

namespace staticlm::cli {

namespace {

using ojson = nlohmann::ordered_json;

// Heap bytes in use: glibc's count over every arena, or AddressSanitizer's where it replaces
// malloc (glibc's count is then 0).
std::int64_t heap_in_use_bytes() {
#ifdef STATICLM_ASAN
  return static_cast<std::int64_t>(__sanitizer_get_current_allocated_bytes());
#else
  return static_cast<std::int64_t>(mallinfo2().uordblks);
#endif
}

struct ServeArgs {
  std::string model, host = "127.0.0.1";
  int port = 8080, slots = 1, queue = 8, threads = 0;
  std::int64_t max_body = 1 << 20;
  std::optional<int> timeout;  // llama-server's --timeout: seconds a read or write may wait
  bool seed_given = false;     // --seed on the command line
  std::string alias;           // llama-server's --alias: the model's name in the API ("": the directory's)
  bool allow_local_files = false;
  bool metrics = false, no_slots = false;  // llama-server's --metrics, --no-slots
  bool f32_activations = false;
  bool resident_weights = false;
  std::string chat_template;
  std::string chat_template_kwargs;
  std::string reasoning_format = "auto";
  std::int64_t reasoning_budget = -1;
  std::string api_key;                       // --api-key K[,K...]
  std::optional<std::string> api_key_file;  // --api-key-file F
  std::optional<std::string> config_file;
  std::vector<std::string> sets;
  std::optional<std::string> profile;  // --profile: prepended to sets
  std::optional<std::int64_t> max_seq;
  SamplingFlags sampling;
  BackendChoice backend;
};

void json_reply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void error_reply(httplib::Response& res, int status, const std::string& message, const std::string& type,
                 const std::string& param = "") {
  json_reply(res, status, error_json(status, message, type, param));
}

// The body, read here and not by httplib: its limit covers only bodies with a Content-Length
// (a chunked one was read whole, however large). False, with 413 in `res`, past `max_body`.
bool read_limited_body(const httplib::Request& req, const httplib::ContentReader& read_body, std::int64_t max_body,
                       httplib::Response& res, std::string& body) {
  // httplib hands a form's parts only to a multipart reader (the plain one threw
  // bad_function_call: a 500); every endpoint here takes a JSON body.
  if (req.is_multipart_form_data()) {
    error_reply(res, 415, "body: expected JSON (Content-Type: application/json), not multipart/form-data",
                                    "invalid_request_error");
    return false;
  }
  // httplib decodes gzip and deflate bodies, hands over nothing for br (built without it) and the
  // raw bytes for other codings.
  const std::string encoding = req.get_header_value("Content-Encoding");
  if (!encoding.empty() && encoding != "gzip" && encoding != "deflate" && encoding != "identity") {
    res.set_header("Connection", "close");
    error_reply(res, 415, "body: Content-Encoding '" + encoding + "' is not supported (gzip, deflate or none)",
                                    "invalid_request_error");
    return false;
  }
  // httplib reads a Content-Length with strtoull: "-5" came out as a huge size (a 413), "1x" as 1.
  const std::string declared = req.get_header_value("Content-Length");
  if (!declared.empty() && declared.find_first_not_of("0123456789") != std::string::npos) {
    res.set_header("Connection", "close");
    error_reply(res, 400, "Content-Length '" + declared + "' is not a number of bytes", "invalid_request_error");
    return false;
  }
  // A declared length over the limit is answered at once, before any of the body is read (reading
  // first left the client waiting for the read timeout when it sends less than it declares).
  const std::size_t digits = declared.find_first_not_of('0');  // leading zeros say nothing
  if (digits != std::string::npos && (declared.size() - digits > 18 || std::stoll(declared.substr(digits)) > max_body)) {
    res.set_header("Connection", "close");
    error_reply(res, 413, "request body larger than --max-body " + std::to_string(max_body) + " bytes",
                                    "request_too_large");
    return false;
  }
  bool too_large = false;
  const bool whole = read_body([&](const char* data, std::size_t n) {
    too_large = body.size() + n > static_cast<std::size_t>(max_body);
    if (!too_large) body.append(data, n);
    return !too_large;
  });
  // httplib itself refuses (and hands over nothing of) a body whose Content-Length is too large.
  if (!whole && !declared.empty() && std::strtoull(declared.c_str(), nullptr, 10) > static_cast<std::uint64_t>(max_body)) {
    too_large = true;
  }
  if (!too_large && whole) return true;
  if (!too_large) {
    // Data that does not decode: httplib hands over nothing (which read as "not valid JSON").
    res.set_header("Connection", "close");
    error_reply(res, 400, encoding.empty() || encoding == "identity"
                                        ? "body: could not be read (the connection ended early)"
                                        : "body: not valid " + encoding + " data (Content-Encoding: " + encoding + ")",
                                    "invalid_request_error");
    return false;
  }
  res.set_header("Connection", "close");
  error_reply(res, 413, "request body larger than --max-body " + std::to_string(max_body) + " bytes",
                                  "request_too_large");
  return false;
}

// A thin adapter over the library's serve host (api/serve_host.h): flags in, HTTP out.
void serve_command(const ServeArgs& a) {
  if (a.slots < 1 || a.slots > 64) invalid_argument("--slots " + std::to_string(a.slots) + ": must be in [1, 64]");
  if (a.queue < 0 || a.queue > 4096) invalid_argument("--queue " + std::to_string(a.queue) + ": must be in [0, 4096]");
  if (a.port < 0 || a.port > 65535) invalid_argument("--port " + std::to_string(a.port) + ": must be in [0, 65535] (0: any free port)");
  if (a.max_body < 1) invalid_argument("--max-body " + std::to_string(a.max_body) + ": must be at least 1");
  if (a.host.empty()) invalid_argument("--host: empty (an address to listen on, e.g. 127.0.0.1 or 0.0.0.0)");
  const std::vector<std::string> api_keys = read_api_keys(a.api_key, a.api_key_file);
  api::ServeHostOptions o;
  o.model = a.model;
  o.alias = a.alias;
  o.threads = resolve_threads(a.threads);
  o.slots = a.slots;
  o.queue = a.queue;
  o.config_file = a.config_file;
  o.sets = a.sets;
  o.max_seq = a.max_seq;
  // llama-server's seeds: without --seed (or with -1) each request draws its own.
  o.random_seed = !a.seed_given || a.sampling.seed == -1;
  SamplingFlags sampling = a.sampling;
  if (sampling.seed == -1) sampling.seed = 0;  // not drawn once here
  o.defaults = generate_params(sampling);
  o.allow_local_files = a.allow_local_files;
  o.f32_activations = a.f32_activations;
  o.resident_weights = a.resident_weights;
  o.chat_template = a.chat_template;
  o.chat_template_kwargs = a.chat_template_kwargs;
  o.reasoning_format = a.reasoning_format;
  o.reasoning_budget = a.reasoning_budget;
  o.backend = a.backend;
  o.log = log_to_stderr;

  // SIGINT / SIGTERM stop the server cleanly: blocked here, before the host starts its threads
  // (every thread started later inherits that), and awaited by one thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::unique_ptr<api::ServeHost> host = api::ServeHost::create(o);
  ServeEngine& engine = host->engine();
  const RequestContext& context = host->context();
  const std::string& model_name = host->model_name();

  // Streams being written: a stop signal lets them end (httplib's stop cuts a stream mid-way).
  // Before the server, which holds the providers that count in it.
  std::atomic<int> streaming{0};
  httplib::Server svr;
  // Enough connection threads for every request that may run or wait, and some to answer 503.
  const std::size_t conn_threads = static_cast<std::size_t>(a.queue + a.slots) + 8;
  svr.new_task_queue = [conn_threads] { return new httplib::ThreadPool(conn_threads); };
  svr.set_payload_max_length(static_cast<std::size_t>(a.max_body));
  if (a.timeout) {
    svr.set_read_timeout(*a.timeout, 0);
    svr.set_write_timeout(*a.timeout, 0);
  }
  // Every answer is a whole JSON document or an event stream: a Range header is ignored (httplib
  // cut any 200 answer to the asked bytes, a POST's JSON included). The request object is the
  // server's own, not const; only the handler's view of it is.
  svr.set_pre_routing_handler([&api_keys](const httplib::Request& req, httplib::Response& res) {
    const_cast<httplib::Request&>(req).ranges.clear();
    if (!api_keys.empty() && req.method != "OPTIONS" && !api_key_public_path(req.path) &&
        !api_key_accepted(api_keys, req.get_header_value("Authorization"), req.get_header_value("X-Api-Key"))) {
      error_reply(res, 401, "invalid or missing API key: send 'Authorization: Bearer KEY' with a key of the server's --api-key",
                                      "authentication_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // A handler that throws (a bug) answers 500 in JSON; httplib's default put the exception's
  // text in a response header.
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.headers.erase("EXCEPTION_WHAT");
    error_reply(res, 500, "internal error while answering", "server_error");
  });
  svr.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    // As in read_limited_body, for the requests httplib refuses itself.
    const std::string length = req.get_header_value("Content-Length");
    if (res.status == 413 && !length.empty() && length.find_first_not_of("0123456789") != std::string::npos) {
      res.status = 400;
      res.set_header("Connection", "close");
      res.set_content(error_json(400, "Content-Length '" + length + "' is not a number of bytes", "invalid_request_error"),
                      "application/json");
      return;
    }
    const std::string what = res.status == 413 ? "request body larger than --max-body " + std::to_string(a.max_body) + " bytes"
                             : res.status == 404 ? "no such endpoint"
                                                 : "HTTP " + std::to_string(res.status);
    res.set_content(error_json(res.status, what, res.status == 413 ? "request_too_large" : "invalid_request_error"), "application/json");
  });

  // Browsers may call the API from any page, as llama.cpp's server allows; not when image parts may
  // name local files, where any web page could then read them through the user's server.
  if (!a.allow_local_files) {
    svr.set_default_headers({{"Access-Control-Allow-Origin", "*"}});
    svr.Options(R"(/.*)", [](const httplib::Request& req, httplib::Response& res) {
      res.status = 204;
      res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
      const std::string asked = req.get_header_value("Access-Control-Request-Headers");
      res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Content-Type, Authorization" : asked);
      res.set_header("Access-Control-Max-Age", "86400");
    });
  }
  // A known endpoint called with the wrong method: 405 naming the one it takes.
  const auto wrong_method = [](const char* allowed) {
    return [allowed](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allowed);
      error_reply(res, 405, req.method + " " + req.path + ": method not allowed (use " + allowed + ")",
                                      "invalid_request_error");
    };
  };
  // Every other method on a known path (PUT, DELETE, PATCH too) is 405 naming the one it takes.
  for (const char* path : {"/health", "/v1/health", "/props", "/metrics", "/slots", "/v1/models", R"(/v1/models/.+)", "/models", R"(/models/.+)"}) {
    svr.Post(path, wrong_method("GET"));
    svr.Put(path, wrong_method("GET"));
    svr.Delete(path, wrong_method("GET"));
    svr.Patch(path, wrong_method("GET"));
  }
  for (const char* path : {"/v1/chat/completions", "/v1/completions", "/chat/completions", "/completions", "/completion",
                           "/tokenize", "/detokenize", "/apply-template"}) {
    svr.Get(path, wrong_method("POST"));
    svr.Put(path, wrong_method("POST"));
    svr.Delete(path, wrong_method("POST"));
    svr.Patch(path, wrong_method("POST"));
  }

  for (const char* path : {"/health", "/v1/health"}) {  // llama-server answers both
    svr.Get(path, [&](const httplib::Request&, httplib::Response& res) {
      const ServeEngine::Stats s = engine.stats();
      json_reply(res, 200, dump_reply_json({{"status", "ok"}, {"slots", a.slots}, {"queue", a.queue}, {"in_flight", s.in_flight},
                                            {"completed", s.completed}, {"cancelled", s.cancelled}, {"failed", s.failed},
                                            {"invalid", s.invalid},
                                            {"rejected", s.rejected},
                                            // Heap bytes in use: flat across requests.
                                            {"heap_in_use_bytes", heap_in_use_bytes()}}));
    });
  }
  // llama-server's monitoring endpoints: /metrics when asked for, /slots unless turned off.
  svr.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    if (!a.metrics) {
      error_reply(res, 501, "This server does not support metrics endpoint. Start it with `--metrics`", "not_supported_error");
      return;
    }
    res.set_content(metrics_reply(engine.take_metrics()), "text/plain; version=0.0.4");
  });
  svr.Get("/slots", [&](const httplib::Request& req, httplib::Response& res) {
    if (a.no_slots) {
      error_reply(res, 501, "This server does not support slots endpoint. Start it without `--no-slots`", "not_supported_error");
      return;
    }
    // ?fail_on_no_slot (any value, as llama-server reads it): 503 while a request runs. The
    // slots are caches that one worker serves in turn, so a new request can only start at once
    // when none runs (a load balancer's probe).
    if (req.has_param("fail_on_no_slot") && engine.stats().in_flight > 0) {
      error_reply(res, 503, "no slot available", "unavailable_error");
      return;
    }
    json_reply(res, 200, slots_reply(context, engine.slot_states()));
  });
  const std::string props = props_reply(context, a.slots);  // fixed while the server runs
  svr.Get("/props", [&](const httplib::Request&, httplib::Response& res) { json_reply(res, 200, props); });
  const std::int64_t started = static_cast<std::int64_t>(std::time(nullptr));
  const ojson model_json = {{"id", model_name}, {"object", "model"}, {"created", started}, {"owned_by", "staticlm"}};
  for (const char* path : {"/v1/models", "/models"}) {
    svr.Get(path, [&](const httplib::Request&, httplib::Response& res) {
      json_reply(res, 200, dump_reply_json({{"object", "list"}, {"data", ojson::array({model_json})}}));
    });
  }
  for (const char* path : {R"(/v1/models/(.+))", R"(/models/(.+))"}) {
    svr.Get(path, [&](const httplib::Request& req, httplib::Response& res) {
      const std::string id = req.matches[1];
      if (id != model_name) {
        error_reply(res, 404, "model '" + id + "' does not exist (this server serves '" + model_name + "')",
                                        "invalid_request_error", "model");
        return;
      }
      json_reply(res, 200, dump_reply_json(model_json));
    });
  }
  // Counts a stream in `streaming` while httplib holds its provider.
  struct Streaming {
    explicit Streaming(std::atomic<int>& n) : n_(n) { ++n_; }
    ~Streaming() { --n_; }
    std::atomic<int>& n_;
  };
  // Chat completions and text completions differ in how a request is parsed and how a reply is
  // shaped; the queue, the waiting and the streaming are the same.
  using Parser = void (*)(const std::string&, const RequestContext&, ChatJob&);
  const auto completions = [&](Parser parse, bool text_completion, bool llama = false) {
    return [&, parse, text_completion, llama](const httplib::Request& req, httplib::Response& res,
                                       const httplib::ContentReader& read_body) {
    std::string body;
    if (!read_limited_body(req, read_body, a.max_body, res, body)) return;
    auto job = std::make_shared<ChatJob>();
    try {
      parse(body, context, *job);
    } catch (const RequestError& e) {
      error_reply(res, 400, e.message, "invalid_request_error", e.param);
      return;
    }
    if (!engine.submit(job)) {
      if (engine.shutting_down()) {
        error_reply(res, 503, "the server is shutting down", "unavailable_error");
      } else {
        error_reply(res, 503, "server busy: " + std::to_string(a.queue) + " requests already wait (--queue); retry later",
                    "server_busy");
      }
      return;
    }
    Reply reply{random_id(text_completion ? "cmpl-" : "chatcmpl-"), model_name, static_cast<std::int64_t>(std::time(nullptr)),
                context.tokenizer, text_completion, llama};
    reply.usage_null = job->stream && job->usage_chunk;
    if (!job->stream) {
      // Wakes now and then to notice a client that went away: its generation is cancelled.
      const PeerWatch peer(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
      std::unique_lock l(job->mu);
      while (!job->cv.wait_for(l, std::chrono::milliseconds(250), [&] { return job->done; })) {
        if (peer.closed()) job->cancelled = true;
      }
      if (job->cancelled) return;  // nobody to answer
      if (!job->error.empty()) {
        const JobFailure failure = job_failure(*job);
        json_reply(res, failure.status, failure.body);
        return;
      }
      json_reply(res, 200, dump_reply_json(reply.completion(*job)));
      return;
    }
    res.set_header("Cache-Control", "no-cache");
    auto sent = std::make_shared<std::size_t>(0);
    auto sent_calls = std::make_shared<std::size_t>(0);
    auto opened = std::make_shared<bool>(false);
    auto sent_logprobs = std::make_shared<std::size_t>(0);
    auto sent_reasoning = std::make_shared<std::size_t>(0);
    auto counted = std::make_shared<Streaming>(streaming);  // until httplib drops the provider
    res.set_chunked_content_provider(
        "text/event-stream",
        [job, reply, sent, sent_calls, opened, sent_logprobs, sent_reasoning, counted](std::size_t, httplib::DataSink& sink) {
          auto send = [&](const std::string& data) {
            const std::string s = "data: " + data + "\n\n";
            if (sink.write(s.data(), s.size())) return true;
            job->cancelled = true;
            return false;
          };
          if (!*opened && !reply.text_completion) {  // a chat stream opens with the role
            *opened = true;
            return send(dump_reply_json(reply.chunk({{"role", "assistant"}, {"content", ""}}, nullptr)));
          }
          std::string piece, thought, failure, finish, content_chunk;
          std::vector<ToolCall> calls;
          bool done = false;
          {
            std::unique_lock l(job->mu);
            // Wakes now and then to notice a client that went away while nothing was written.
            while (!job->done && job->released <= *sent && job->tool_calls.size() <= *sent_calls &&
                   job->reasoning.size() <= *sent_reasoning) {
              if (job->cv.wait_for(l, std::chrono::milliseconds(250)) == std::cv_status::timeout && !sink.is_writable()) {
                job->cancelled = true;
                return false;
              }
            }
            thought = job->reasoning.substr(*sent_reasoning);
            *sent_reasoning = job->reasoning.size();
            // (A reply cut at a stop string the stream never showed may end before *sent.)
            if (job->released > *sent) piece = job->content.substr(*sent, job->released - *sent);
            *sent = std::max(*sent, job->released);
            // The log-probabilities of the tokens whose text is sent (all of them at the end).
            std::size_t to = *sent_logprobs;
            while (to < job->logprob_entries.size() && (job->done || job->logprob_entries[to].content_end <= *sent)) ++to;
            if (!piece.empty() || to > *sent_logprobs) {
              content_chunk = dump_reply_json(reply.content_chunk(piece, *job, *sent_logprobs, to));
            }
            *sent_logprobs = to;
            done = job->done;
            if (!job->error.empty()) failure = job_failure(*job).body;
            finish = job->finish_reason;
            calls = job->tool_calls;
          }
          if (!thought.empty() && !send(dump_reply_json(reply.chunk({{"reasoning_content", thought}}, nullptr)))) return false;
          if (!content_chunk.empty() && !send(content_chunk)) return false;
          if (calls.size() > *sent_calls) {
            if (!send(dump_reply_json(reply.chunk({{"tool_calls", tool_calls_json(calls, *sent_calls)}}, nullptr)))) return false;
            *sent_calls = calls.size();
          }
          if (!done) return true;
          if (!failure.empty()) {
            if (!send(failure)) return false;
          } else if (reply.llama) {  // llama.cpp's last event: the summary, and no [DONE]
            ojson last = reply.completion(*job);
            last["content"] = "";
            last.erase("completion_probabilities");
            if (!send(dump_reply_json(last))) return false;
            sink.done();
            return true;
          } else {
            ojson last = reply.chunk(ojson::object(), finish);
            if (!job->usage_chunk) last["usage"] = usage_json(*job);  // as llama.cpp's server does
            if (!send(dump_reply_json(last))) return false;
            if (job->usage_chunk) {
              ojson usage = reply.chunk(ojson::object(), nullptr);
              usage["choices"] = ojson::array();
              usage["usage"] = usage_json(*job);
              if (!send(dump_reply_json(usage))) return false;
            }
          }
          if (!send("[DONE]")) return false;
          sink.done();
          return true;
        },
        [job](bool success) {
          if (!success) job->cancelled = true;
        });
    };
  };
  // llama.cpp's /tokenize, /detokenize and /apply-template answer a JSON body at once (no
  // generation); a refused field is 400 naming it.
  const auto json_endpoint = [&](std::function<std::string(const std::string&)> answer) {
    return [&, answer](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& read_body) {
      std::string body;
      if (!read_limited_body(req, read_body, a.max_body, res, body)) return;
      try {
        json_reply(res, 200, answer(body));
      } catch (const RequestError& e) {
        error_reply(res, 400, e.message, "invalid_request_error", e.param);
      }
    };
  };
  svr.Post("/tokenize", json_endpoint([&](const std::string& body) { return tokenize_reply(body, *context.tokenizer); }));
  svr.Post("/detokenize", json_endpoint([&](const std::string& body) { return detokenize_reply(body, *context.tokenizer); }));
  svr.Post("/apply-template", json_endpoint([&](const std::string& body) { return apply_template_reply(body, context); }));
  // The OpenAI paths also without /v1, as llama.cpp's server answers them (clients given the
  // server's root as their base URL).
  for (const char* path : {"/v1/chat/completions", "/chat/completions"}) svr.Post(path, completions(parse_chat_request, false));
  for (const char* path : {"/v1/completions", "/completions"}) svr.Post(path, completions(parse_completion_request, true));
  svr.Post("/completion", completions(parse_llama_completion_request, true, /*llama=*/true));

  // SO_REUSEADDR only: httplib's default SO_REUSEPORT let a second server bind a port in use
  // and take half its connections.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int port = a.port == 0 ? svr.bind_to_any_port(a.host) : (svr.bind_to_port(a.host, a.port) ? a.port : -1);
  if (port < 0) invalid_argument("serve: cannot listen on " + a.host + ":" + std::to_string(a.port) + " (" + std::strerror(errno) + ")");
  // The running request stops at its next layer or token and every request is answered (503)
  // before the server stops: a Ctrl-C does not wait for a long reply to finish.
  std::thread([&svr, &engine, &streaming, stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    engine.shut_down();
    // The streams write their last events (at most 10 s: a client that stopped reading).
    for (int i = 0; i < 1000 && streaming > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    svr.stop();
  }).detach();
  std::cout << "staticlm serve: listening on http://" << a.host << ":" << port << " (model " << model_name << ", slots "
            << a.slots << ", queue " << a.queue << ", max_seq " << host->max_seq() << ")" << std::endl;
  svr.listen_after_bind();
  std::cerr << "staticlm serve: stopped\n";
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (chat completions, streaming and not)");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("--host", a->host, "address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", a->port, "port (default 8080; 0: any free port, printed at start)");
  cmd->add_option("--parallel", a->slots, "conversation slots kept as a prompt cache (default 1; llama.cpp's -np)");
  // llama-server's --slots is a switch (the /slots endpoint, on by default); with a count it is
  // --parallel's.
  cmd->add_option_function<std::string>(
         "--slots",
         [a](const std::string& v) {
           if (v.empty()) return;
           const std::optional<std::int64_t> n = parse_count(v, 1000);
           if (!n) invalid_argument("--slots " + v + ": expected a count of slots (no value: llama-server's switch, /slots is on)");
           a->slots = static_cast<int>(*n);
         },
         "as --parallel; without a value, llama-server's switch (GET /slots answers; --no-slots turns it off)")
      ->expected(0, 1);
  cmd->add_option("--timeout", a->timeout, "seconds a connection may wait for a request's bytes or a reply's write (llama-server's; default: cpp-httplib's 5)")
      ->check(CLI::Range(1, 86400));
  cmd->add_option("-a,--alias", a->alias, "the model's name in /v1/models and the replies (llama-server's; default: the directory's name)");
  cmd->add_option("--queue", a->queue, "requests that may wait while one runs; beyond them 503 (default 8)");
  cmd->add_option("--max-body", a->max_body, "largest request body in bytes; larger: 413 (default 1048576)");
  cmd->add_flag("--metrics", a->metrics, "llama-server's: answer GET /metrics (Prometheus counters of tokens, seconds and requests)");
  cmd->add_flag("--no-slots", a->no_slots, "llama-server's: GET /slots answers 501 (default: the slots' state)");
  cmd->add_flag("--allow-local-files", a->allow_local_files, "let image parts name local files (default: data: URLs only)");
  cmd->add_option("--config", a->config_file, "runtime config (YAML)");
  cmd->add_option("--set", a->sets, "override a runtime config key: key=value (repeatable)");
  cmd->add_option("-c,--max-seq,--ctx-size", a->max_seq, "static sequence length of each slot: prompt + reply + 1")
      ->check(max_seq_range());
  cmd->add_option("-t,--threads", a->threads, "CPU threads for the subgraphs (default 0: one per core)");
  cmd->add_option("--chat-template,--chat-template-file", a->chat_template,
                  "a Jinja chat template: a file, or the template itself (text holding {{ or {%), as llama.cpp's "
                  "--chat-template takes it; overrides the checkpoint's");
  cmd->add_option("--chat-template-kwargs", a->chat_template_kwargs,
                  "a JSON object of chat template variables for every chat request, e.g. '{\"enable_thinking\": true}' "
                  "(a request's chat_template_kwargs are set over them)");
  cmd->add_option("--api-key", a->api_key,
                  "llama.cpp's: requests must send 'Authorization: Bearer KEY' (or X-Api-Key) with one of these "
                  "comma-separated keys, else 401 (/health and /v1/models stay open)");
  cmd->add_option("--api-key-file", a->api_key_file, "llama.cpp's: a file of API keys, one a line (as --api-key)");
  cmd->add_option("--reasoning-format", a->reasoning_format,
                  "llama.cpp's: what a chat request without reasoning_format gets: auto (the default), deepseek or "
                  "deepseek-legacy answer a thought as reasoning_content; none leaves it in the content");
  cmd->add_option("--reasoning-budget", a->reasoning_budget,
                  "llama.cpp's: -1 (the default) leaves thinking to the template's variables; 0 turns it off "
                  "(enable_thinking=false, under --chat-template-kwargs and each request's)");
  cmd->add_flag("--jinja")->description("accepted for llama.cpp's command lines: chat templates are always rendered as Jinja");
  cmd->add_flag("--f32-activations", a->f32_activations,
                "keep prefill/vision activations f32 on bf16 weights (default: rounded to bf16 as transformers "
                "does, which lets bf16 dot-product instructions run)");
  add_backend_options(*cmd, a->backend);
  add_mmap_flags(*cmd, a->resident_weights);
  add_sampling_flags(*cmd, a->sampling);
  add_llama_cpp_tuning_flags(*cmd);
  add_llama_cpp_refused_flags(*cmd);
  add_llama_server_flags(*cmd);
  add_profile_option(*cmd, a->profile);
  cmd->callback([a, cmd] {
    a->sets = with_profile(a->sets, a->profile);
    a->seed_given = cmd->count("--seed") > 0;
    serve_command(*a);
  });
}

}  // namespace staticlm::cli
