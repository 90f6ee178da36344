// The C API (include/staticlm/staticlm.h) over the public C++ API. Every entry point catches
// everything at the boundary and turns it into a status and this thread's last-error message;
// handles are checked against a registry of live ones before they are touched, so a null,
// freed or foreign pointer is an error code instead of a crash.
#include "staticlm/staticlm.h"

#include <atomic>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/guarded.h"
#include "base/error.h"
#include "staticlm/inputs.h"
#include "staticlm/inspect.h"
#include "staticlm/model.h"
#include "staticlm/tools.h"
#include "text/tool_calls.h"

struct staticlm_model {
  staticlm::api::Model model;
};

struct staticlm_session {
  std::unique_ptr<staticlm::api::Session> session;
  std::atomic<int> calls{0};  // staticlm_generate calls running: free refuses the session meanwhile
  staticlm_stats stats{};
  std::string text;  // of the last generate
  std::mutex abort_mu;  // the pair below: set by one thread, read by a generate on another
  staticlm_abort_callback abort = nullptr;  // staticlm_session_set_abort_callback
  void* abort_data = nullptr;
};

struct staticlm_tensors {
  std::map<std::string, staticlm::api::HostTensor> tensors;  // sorted by name
};

namespace {

using staticlm::api::ErrorCode;

thread_local std::string last_error;

// An error the C layer itself raises (bad handle, small buffer, null argument).
struct CError {
  staticlm_status status;
  std::string message;
};

// The live handles and their types. A registry rather than a magic field in the handle:
// reading a freed handle's memory is itself undefined behaviour.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, std::string> live;  // handle -> its type name
};
Registry& registry() {
  static Registry r;
  return r;
}
void add_live(const void* h, const char* type) {
  std::lock_guard lock(registry().mutex);
  registry().live[h] = type;
}
bool remove_live(const void* h) {
  std::lock_guard lock(registry().mutex);
  return registry().live.erase(h) == 1;
}
template <class H>
H* checked(H* h, const char* type) {
  std::lock_guard lock(registry().mutex);
  const auto it = registry().live.find(h);
  if (h == nullptr || it == registry().live.end() || it->second != type) {
    throw CError{STATICLM_ERROR_INVALID_HANDLE,
                 std::string(h == nullptr ? "null " : "not a live ") + type + " handle" +
                     (h == nullptr ? "" : " (freed, or never created)")};
  }
  return h;
}

void require(const void* p, const char* what) {
  if (p == nullptr) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, std::string(what) + " is null"};
}

// n C strings, none null.
std::vector<std::string> string_list(const char* const* items, size_t n, const char* what) {
  if (items == nullptr && n > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, std::string(what) + " is null but its count is not 0"};
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) {
    if (items[i] == nullptr) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, std::string(what) + "[" + std::to_string(i) + "] is null"};
    out.emplace_back(items[i]);
  }
  return out;
}

staticlm_status status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return STATICLM_ERROR_INVALID_ARGUMENT;
    case ErrorCode::kInvalidFile: return STATICLM_ERROR_INVALID_FILE;
    case ErrorCode::kUnsupported: return STATICLM_ERROR_UNSUPPORTED;
    case ErrorCode::kOutOfRange: return STATICLM_ERROR_OUT_OF_RANGE;
    case ErrorCode::kInternal: return STATICLM_ERROR_INTERNAL;
  }
  return STATICLM_ERROR_INTERNAL;
}

staticlm_status fail(const char* fn, staticlm_status status, const std::string& message) {
  last_error = std::string(fn) + ": " + message;
  return status;
}

// Runs f at the boundary: nothing escapes into C.
template <class F>
staticlm_status boundary(const char* fn, F&& f) {
  try {
    f();
    last_error.clear();
    return STATICLM_OK;
  } catch (const CError& e) {
    return fail(fn, e.status, e.message);
  } catch (const staticlm::api::Error& e) {
    return fail(fn, status_for(e.code()), e.what());
  } catch (const staticlm::Error& e) {
    return fail(fn, status_for(staticlm::api::error_code_for(e.kind())), e.what());
  } catch (const std::bad_alloc&) {
    return fail(fn, STATICLM_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(fn, STATICLM_ERROR_INTERNAL, std::string("internal: ") + e.what());
  } catch (...) {
    return fail(fn, STATICLM_ERROR_INTERNAL, "internal: unknown exception");
  }
}

// Copies `s` with its NUL into a caller's buffer of `capacity` bytes.
void copy_out(const std::string& s, char* text, size_t capacity, size_t* size_needed) {
  require(size_needed, "size_needed");
  *size_needed = s.size() + 1;
  if (text == nullptr && capacity > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "text is null but capacity is not 0"};
  if (capacity < s.size() + 1) {
    throw CError{STATICLM_ERROR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " bytes but " +
                                                      std::to_string(s.size() + 1) + " are needed"};
  }
  std::memcpy(text, s.c_str(), s.size() + 1);
}

staticlm::api::Tokenizer tokenizer_of(const staticlm_model* m) {
  auto tok = m->model.tokenizer();
  if (!tok) {
    throw CError{STATICLM_ERROR_INVALID_ARGUMENT,
                 "the checkpoint " + m->model.info().dir + " has no tokenizer.json; give token ids"};
  }
  return *tok;
}

}  // namespace

extern "C" {

const char* staticlm_version(void) { return "0.1.0"; }
const char* staticlm_last_error(void) { return last_error.c_str(); }

const char* staticlm_status_name(staticlm_status status) {
  switch (status) {
    case STATICLM_OK: return "ok";
    case STATICLM_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case STATICLM_ERROR_INVALID_FILE: return "invalid file";
    case STATICLM_ERROR_UNSUPPORTED: return "unsupported";
    case STATICLM_ERROR_OUT_OF_RANGE: return "out of range";
    case STATICLM_ERROR_INTERNAL: return "internal";
    case STATICLM_ERROR_INVALID_HANDLE: return "invalid handle";
    case STATICLM_ERROR_BUFFER_TOO_SMALL: return "buffer too small";
  }
  return "unknown status";
}

staticlm_status staticlm_model_open(const char* dir, staticlm_model** out) {
  return boundary("staticlm_model_open", [&] {
    require(dir, "dir");
    require(out, "out");
    *out = nullptr;
    auto m = std::make_unique<staticlm_model>(staticlm_model{staticlm::api::Model::open(dir)});
    add_live(m.get(), "staticlm_model");
    *out = m.release();
  });
}

staticlm_status staticlm_model_free(staticlm_model* model) {
  return boundary("staticlm_model_free", [&] {
    checked(model, "staticlm_model");
    if (remove_live(model)) delete model;
  });
}

staticlm_status staticlm_model_vocab_size(const staticlm_model* model, int64_t* out) {
  return boundary("staticlm_model_vocab_size", [&] {
    require(out, "out");
    *out = checked(model, "staticlm_model")->model.info().vocab_size;
  });
}

staticlm_status staticlm_model_has_vision(const staticlm_model* model, int* out) {
  return boundary("staticlm_model_has_vision", [&] {
    require(out, "out");
    *out = checked(model, "staticlm_model")->model.info().has_vision ? 1 : 0;
  });
}

staticlm_status staticlm_tokenize(const staticlm_model* model, const char* text, int64_t* ids, size_t capacity,
                                  size_t* n_needed) {
  return boundary("staticlm_tokenize", [&] {
    const staticlm_model* m = checked(model, "staticlm_model");
    require(text, "text");
    require(n_needed, "n_needed");
    if (ids == nullptr && capacity > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "ids is null but capacity is not 0"};
    const std::vector<std::int64_t> out = tokenizer_of(m).encode(text);
    *n_needed = out.size();
    if (capacity < out.size()) {
      throw CError{STATICLM_ERROR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " ids but " +
                                                        std::to_string(out.size()) + " are needed"};
    }
    std::copy(out.begin(), out.end(), ids);
  });
}

staticlm_status staticlm_detokenize(const staticlm_model* model, const int64_t* ids, size_t n_ids, char* text,
                                    size_t capacity, size_t* size_needed) {
  return boundary("staticlm_detokenize", [&] {
    const staticlm_model* m = checked(model, "staticlm_model");
    if (ids == nullptr && n_ids > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "ids is null but n_ids is not 0"};
    const std::vector<std::int64_t> in(ids, ids + n_ids);
    copy_out(tokenizer_of(m).decode(in), text, capacity, size_needed);
  });
}

staticlm_status staticlm_chat_prompt(const staticlm_model* model, const char* prompt, char* text, size_t capacity,
                                     size_t* size_needed) {
  return boundary("staticlm_chat_prompt", [&] {
    const staticlm_model* m = checked(model, "staticlm_model");
    require(prompt, "prompt");
    copy_out(tokenizer_of(m).chat_prompt(prompt), text, capacity, size_needed);
  });
}

staticlm_chat_format_params staticlm_chat_format_default_params(void) {
  staticlm_chat_format_params p;
  std::memset(&p, 0, sizeof p);
  p.add_generation_prompt = 1;
  return p;
}

staticlm_status staticlm_chat_format(const staticlm_model* model, const char* messages_json,
                                     const staticlm_chat_format_params* params, char* text, size_t capacity,
                                     size_t* size_needed) {
  return boundary("staticlm_chat_format", [&] {
    const staticlm_model* m = checked(model, "staticlm_model");
    require(messages_json, "messages_json");
    staticlm::api::ChatTemplateOptions o;
    if (params != nullptr) {
      if (params->template_file != nullptr) o.template_file = params->template_file;
      if (params->tools_json != nullptr) o.tools_json = params->tools_json;
      o.vars = string_list(params->vars, params->n_vars, "vars");
      o.add_generation_prompt = params->add_generation_prompt != 0;
    }
    copy_out(tokenizer_of(m).apply_chat_template(messages_json, o).text, text, capacity, size_needed);
  });
}

staticlm_status staticlm_tool_call_grammar(const char* tools_json, const char* tool_choice, int parallel, char* grammar,
                                           size_t capacity, size_t* size_needed) {
  return boundary("staticlm_tool_call_grammar", [&] {
    require(tools_json, "tools_json");
    copy_out(staticlm::api::tool_call_grammar(tools_json, tool_choice != nullptr ? tool_choice : "required", parallel != 0),
             grammar, capacity, size_needed);
  });
}

staticlm_status staticlm_parse_tool_calls(const char* text, char* json, size_t capacity, size_t* size_needed) {
  return boundary("staticlm_parse_tool_calls", [&] {
    require(text, "text");
    copy_out(staticlm::reply_json(staticlm::parse_gemma4_reply(text)), json, capacity, size_needed);  // run --json's form
  });
}

staticlm_session_params staticlm_session_default_params(void) {
  staticlm_session_params p;
  std::memset(&p, 0, sizeof p);
  return p;
}

staticlm_status staticlm_session_create(const staticlm_model* model, const staticlm_session_params* params,
                                        staticlm_session** out) {
  return boundary("staticlm_session_create", [&] {
    const staticlm_model* m = checked(model, "staticlm_model");
    require(out, "out");
    *out = nullptr;
    staticlm::api::SessionOptions o;
    if (params != nullptr) {
      o.max_seq = params->max_seq;
      o.threads = params->threads;
      if (params->config_file != nullptr) o.config_file = params->config_file;
      o.sets = string_list(params->sets, params->n_sets, "sets");
    }
    auto s = std::make_unique<staticlm_session>();
    s->session = m->model.session(o);
    add_live(s.get(), "staticlm_session");
    *out = s.release();
  });
}

staticlm_status staticlm_session_free(staticlm_session* session) {
  return boundary("staticlm_session_free", [&] {
    if (checked(session, "staticlm_session")->calls > 0) {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT,
                   "the session is in a staticlm_generate call (free it after the call returns, not from its callback)"};
    }
    if (remove_live(session)) delete session;
  });
}

staticlm_status staticlm_session_set_abort_callback(staticlm_session* session, staticlm_abort_callback callback,
                                                    void* user_data) {
  return boundary("staticlm_session_set_abort_callback", [&] {
    staticlm_session* s = checked(session, "staticlm_session");
    if (s->calls > 0) {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT,
                   "the session is in a staticlm_generate call (set the abort callback before it)"};
    }
    const std::lock_guard lock(s->abort_mu);
    s->abort = callback;
    s->abort_data = user_data;
  });
}

staticlm_generate_params staticlm_generate_default_params(void) {
  staticlm_generate_params p;
  p.max_new_tokens = 0;
  p.temperature = -1;
  p.top_k = -1;
  p.top_p = -1;
  p.min_p = -1;
  p.repetition_penalty = -1;
  p.seed = 0;
  p.repeat_last_n = -1;
  p.presence_penalty = 0;
  p.frequency_penalty = 0;
  p.stop = nullptr;
  p.n_stop = 0;
  p.logit_bias_tokens = nullptr;
  p.logit_bias_values = nullptr;
  p.n_logit_bias = 0;
  p.ignore_eos = 0;
  p.json_schema = nullptr;
  p.grammar = nullptr;
  p.top_n_sigma = -1;
  p.typical_p = 1;
  p.xtc_probability = 0;
  p.xtc_threshold = 0.1;
  p.mirostat = 0;
  p.mirostat_tau = 5;
  p.mirostat_eta = 0.1;
  p.dry_multiplier = 0;
  p.dry_base = 1.75;
  p.dry_allowed_length = 2;
  p.dry_penalty_last_n = -1;
  p.dry_sequence_breakers = nullptr;
  p.n_dry_sequence_breakers = 0;
  return p;
}

namespace {

// staticlm_generate_with_options' JSON object onto g: each key as the Python keyword of its name.
void apply_options_json(const char* text, staticlm::api::GenerateParams& g) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "options_json: expected a JSON object"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();  // not a structured binding: clang 14 cannot capture one
    const nlohmann::json& value = it.value();
    const auto wrong = [&](const char* expected) {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "options_json." + key + ": expected " + expected};
    };
    if (key == "thought_first" || key == "special") {
      if (!value.is_boolean()) wrong("true or false");
      (key == "special" ? g.special : g.thought_first) = value.get<bool>();
    } else if (key == "dynatemp_range" || key == "dynatemp_exponent") {
      if (!value.is_number()) wrong("a number");
      (key == "dynatemp_range" ? g.dynatemp_range : g.dynatemp_exponent) = value.get<double>();
    } else if (key == "samplers") {
      if (!value.is_array()) wrong("an array of sampler names");
      g.samplers.clear();
      for (const auto& name : value) {
        if (!name.is_string()) wrong("an array of sampler names");
        g.samplers.push_back(name.get<std::string>());
      }
    } else {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "options_json: unknown key '" + key +
                                                        "' (known: thought_first, special, dynatemp_range, dynatemp_exponent, samplers)"};
    }
  }
}

}  // namespace

namespace {

// Both generate entry points; `fn` names the one called in the last-error message.
staticlm_status generate(const char* fn, staticlm_session* session, const staticlm_prompt* prompt,
                         const staticlm_generate_params* params, const char* options_json,
                         staticlm_token_callback callback, void* user_data, int64_t* tokens, size_t capacity,
                         size_t* n_tokens) {
  return boundary(fn, [&] {
    staticlm_session* s = checked(session, "staticlm_session");
    ++s->calls;
    struct Leave {
      std::atomic<int>& calls;
      ~Leave() { --calls; }
    } leave{s->calls};
    require(prompt, "prompt");
    if (tokens == nullptr && capacity > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "tokens is null but capacity is not 0"};
    if (prompt->ids == nullptr && prompt->n_ids > 0) {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "prompt->ids is null but prompt->n_ids is not 0"};
    }
    if ((prompt->text != nullptr) == (prompt->n_ids > 0)) {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "give exactly one of prompt->text and prompt->ids"};
    }
    staticlm::api::Prompt p;
    if (prompt->text != nullptr) p.text = prompt->text;
    p.ids.assign(prompt->ids, prompt->ids + prompt->n_ids);
    if (prompt->image != nullptr) p.images.emplace_back(prompt->image);
    staticlm::api::GenerateParams g;
    if (params != nullptr) {
      // Negative means "the default"; NaN means nothing and is refused by name (it compared as
      // neither, so a NaN temperature used to pick the checkpoint's default silently).
      for (const auto& [name, value] : {std::pair<const char*, double>{"temperature", params->temperature},
                                        {"top_p", params->top_p},
                                        {"min_p", params->min_p},
                                        {"repetition_penalty", params->repetition_penalty},
                                        {"presence_penalty", params->presence_penalty},
                                        {"frequency_penalty", params->frequency_penalty},
                                        {"top_n_sigma", params->top_n_sigma},
                                        {"typical_p", params->typical_p},
                                        {"xtc_probability", params->xtc_probability},
                                        {"xtc_threshold", params->xtc_threshold},
                                        {"mirostat_tau", params->mirostat_tau},
                                        {"mirostat_eta", params->mirostat_eta},
                                        {"dry_multiplier", params->dry_multiplier},
                                        {"dry_base", params->dry_base}}) {
        if (std::isnan(value)) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, std::string("params->") + name + " is NaN"};
      }
      if (params->max_new_tokens > 0) g.max_new_tokens = params->max_new_tokens;
      if (params->temperature >= 0) g.temperature = params->temperature;
      if (params->top_k >= 0) g.top_k = params->top_k;
      if (params->top_p >= 0) g.top_p = params->top_p;
      if (params->min_p >= 0) g.min_p = params->min_p;
      if (params->repetition_penalty >= 0) g.repetition_penalty = params->repetition_penalty;
      g.seed = params->seed;
      g.repeat_last_n = params->repeat_last_n;
      g.presence_penalty = params->presence_penalty;
      g.frequency_penalty = params->frequency_penalty;
      g.top_n_sigma = params->top_n_sigma;
      g.typical_p = params->typical_p;
      g.xtc_probability = params->xtc_probability;
      g.xtc_threshold = params->xtc_threshold;
      g.mirostat = params->mirostat;
      g.mirostat_tau = params->mirostat_tau;
      g.mirostat_eta = params->mirostat_eta;
      g.dry_multiplier = params->dry_multiplier;
      g.dry_base = params->dry_base;
      g.dry_allowed_length = params->dry_allowed_length;
      g.dry_penalty_last_n = params->dry_penalty_last_n;
      if (params->dry_sequence_breakers == nullptr && params->n_dry_sequence_breakers > 0) {
        throw CError{STATICLM_ERROR_INVALID_ARGUMENT,
                     "params->dry_sequence_breakers is null but params->n_dry_sequence_breakers is not 0"};
      }
      if (params->dry_sequence_breakers != nullptr) {
        g.dry_sequence_breakers.emplace();
        for (size_t i = 0; i < params->n_dry_sequence_breakers; ++i) {
          if (params->dry_sequence_breakers[i] == nullptr) {
            throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "params->dry_sequence_breakers[" + std::to_string(i) + "] is null"};
          }
          g.dry_sequence_breakers->emplace_back(params->dry_sequence_breakers[i]);
        }
      }
      if (params->stop == nullptr && params->n_stop > 0) {
        throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "params->stop is null but params->n_stop is not 0"};
      }
      for (size_t i = 0; i < params->n_stop; ++i) {
        if (params->stop[i] == nullptr || params->stop[i][0] == '\0') {
          throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "params->stop[" + std::to_string(i) + "] is null or empty"};
        }
        g.stop.emplace_back(params->stop[i]);
      }
      if ((params->logit_bias_tokens == nullptr || params->logit_bias_values == nullptr) && params->n_logit_bias > 0) {
        throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "params->logit_bias_tokens or logit_bias_values is null but params->n_logit_bias is not 0"};
      }
      for (size_t i = 0; i < params->n_logit_bias; ++i) {
        g.logit_bias.emplace_back(params->logit_bias_tokens[i], params->logit_bias_values[i]);
      }
      g.ignore_eos = params->ignore_eos != 0;
      if (params->json_schema != nullptr) g.json_schema = params->json_schema;
      if (params->grammar != nullptr) g.grammar = params->grammar;
    }
    if (options_json != nullptr) apply_options_json(options_json, g);
    {
      const std::lock_guard lock(s->abort_mu);
      if (s->abort != nullptr) g.should_stop = [abort = s->abort, data = s->abort_data] { return abort(data) != 0; };
    }
    staticlm::api::TokenCallback cb;
    if (callback != nullptr) {
      cb = [&](std::int64_t token, std::string_view text) { return callback(token, text.data(), text.size(), user_data) != 0; };
    }
    const staticlm::api::GenerationResult r = s->session->generate(p, g, cb);
    s->text = r.text;
    staticlm_stats& st = s->stats;
    st = staticlm_stats{};
    st.prompt_tokens = r.stats.prompt_tokens;
    st.generated_tokens = r.stats.generated_tokens;
    st.decode_steps = r.stats.decode_steps;
    st.prefill_seconds = r.stats.prefill_seconds;
    st.image_encode_seconds = r.stats.image_encode_seconds;
    st.decode_seconds = r.stats.decode_seconds;
    st.time_to_first_token_seconds = r.stats.time_to_first_token_seconds;
    std::strncpy(st.stop_reason, r.stop_reason.c_str(), sizeof st.stop_reason - 1);
    if (n_tokens != nullptr) *n_tokens = r.tokens.size();
    std::copy_n(r.tokens.begin(), std::min(capacity, r.tokens.size()), tokens);
    if (r.tokens.size() > capacity && tokens != nullptr) {
      throw CError{STATICLM_ERROR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " tokens but " +
                                                        std::to_string(r.tokens.size()) + " were generated"};
    }
  });
}

}  // namespace

staticlm_status staticlm_generate(staticlm_session* session, const staticlm_prompt* prompt,
                                  const staticlm_generate_params* params, staticlm_token_callback callback,
                                  void* user_data, int64_t* tokens, size_t capacity, size_t* n_tokens) {
  return generate("staticlm_generate", session, prompt, params, nullptr, callback, user_data, tokens, capacity, n_tokens);
}

staticlm_status staticlm_generate_with_options(staticlm_session* session, const staticlm_prompt* prompt,
                                               const staticlm_generate_params* params, const char* options_json,
                                               staticlm_token_callback callback, void* user_data, int64_t* tokens,
                                               size_t capacity, size_t* n_tokens) {
  return generate("staticlm_generate_with_options", session, prompt, params, options_json, callback, user_data, tokens,
                  capacity, n_tokens);
}

staticlm_status staticlm_session_text(const staticlm_session* session, char* text, size_t capacity,
                                      size_t* size_needed) {
  return boundary("staticlm_session_text", [&] { copy_out(checked(session, "staticlm_session")->text, text, capacity, size_needed); });
}

staticlm_status staticlm_session_stats(const staticlm_session* session, staticlm_stats* out) {
  return boundary("staticlm_session_stats", [&] {
    require(out, "out");
    *out = checked(session, "staticlm_session")->stats;
  });
}

staticlm_status staticlm_build_static_inputs(const char* model_dir, const char* prompt, const char* image,
                                             const char* const* sets, size_t n_sets, staticlm_tensors** out) {
  return boundary("staticlm_build_static_inputs", [&] {
    require(model_dir, "model_dir");
    require(prompt, "prompt");
    require(out, "out");
    *out = nullptr;
    staticlm::api::InputOptions o;
    o.sets = string_list(sets, n_sets, "sets");
    std::vector<std::string> images;
    if (image != nullptr) images.emplace_back(image);
    auto t = std::make_unique<staticlm_tensors>();
    t->tensors = staticlm::api::build_static_inputs(model_dir, prompt, images, o);
    add_live(t.get(), "staticlm_tensors");
    *out = t.release();
  });
}

staticlm_status staticlm_tensors_free(staticlm_tensors* tensors) {
  return boundary("staticlm_tensors_free", [&] {
    checked(tensors, "staticlm_tensors");
    if (remove_live(tensors)) delete tensors;
  });
}

staticlm_status staticlm_tensors_count(const staticlm_tensors* tensors, size_t* out) {
  return boundary("staticlm_tensors_count", [&] {
    require(out, "out");
    *out = checked(tensors, "staticlm_tensors")->tensors.size();
  });
}

staticlm_status staticlm_tensors_info(const staticlm_tensors* tensors, size_t index, staticlm_tensor_info* out) {
  return boundary("staticlm_tensors_info", [&] {
    const staticlm_tensors* t = checked(tensors, "staticlm_tensors");
    require(out, "out");
    if (index >= t->tensors.size()) {
      throw CError{STATICLM_ERROR_OUT_OF_RANGE, "index " + std::to_string(index) + " but the set holds " +
                                                    std::to_string(t->tensors.size()) + " tensors"};
    }
    const auto it = std::next(t->tensors.begin(), static_cast<std::ptrdiff_t>(index));
    const staticlm::api::HostTensor& h = it->second;
    if (h.shape.size() > 8) throw CError{STATICLM_ERROR_INTERNAL, it->first + " has rank above 8"};
    *out = staticlm_tensor_info{};
    out->name = it->first.c_str();
    out->dtype = h.dtype.c_str();
    out->rank = h.shape.size();
    std::copy(h.shape.begin(), h.shape.end(), out->shape);
    out->nbytes = h.data.size();
  });
}

staticlm_status staticlm_tensors_copy(const staticlm_tensors* tensors, const char* name, void* data, size_t capacity,
                                      size_t* size_needed) {
  return boundary("staticlm_tensors_copy", [&] {
    const staticlm_tensors* t = checked(tensors, "staticlm_tensors");
    require(name, "name");
    require(size_needed, "size_needed");
    const auto it = t->tensors.find(name);
    if (it == t->tensors.end()) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, std::string("no tensor named ") + name};
    const std::vector<unsigned char>& bytes = it->second.data;
    *size_needed = bytes.size();
    if (data == nullptr && capacity > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "data is null but capacity is not 0"};
    if (capacity < bytes.size()) {
      throw CError{STATICLM_ERROR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " bytes but " + name +
                                                        " has " + std::to_string(bytes.size())};
    }
    std::memcpy(data, bytes.data(), bytes.size());
  });
}

staticlm_status staticlm_preprocess_image(const char* model_dir, const char* image, const char* const* sets,
                                          size_t n_sets, float* pixel_values, size_t capacity, size_t* n_needed,
                                          int64_t shape[3]) {
  return boundary("staticlm_preprocess_image", [&] {
    require(model_dir, "model_dir");
    require(image, "image");
    require(n_needed, "n_needed");
    if (pixel_values == nullptr && capacity > 0) {
      throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "pixel_values is null but capacity is not 0"};
    }
    staticlm::api::InputOptions o;
    o.sets = string_list(sets, n_sets, "sets");
    const auto t = staticlm::api::preprocess_image(model_dir, image, o);
    const staticlm::api::HostTensor& pv = t.at("pixel_values");
    if (pv.shape.size() != 3) throw CError{STATICLM_ERROR_INTERNAL, "pixel_values is not of rank 3"};
    const size_t n = static_cast<size_t>(pv.numel());
    *n_needed = n;
    if (shape != nullptr) std::copy(pv.shape.begin(), pv.shape.end(), shape);
    if (capacity < n) {
      throw CError{STATICLM_ERROR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " floats but " +
                                                        std::to_string(n) + " are needed"};
    }
    std::memcpy(pixel_values, pv.data.data(), n * sizeof(float));
  });
}

staticlm_inspect_params staticlm_inspect_default_params(void) {
  staticlm_inspect_params p;
  std::memset(&p, 0, sizeof p);
  p.decode_steps = -1;
  p.gen_steps = -1;
  return p;
}

staticlm_status staticlm_inspect(const char* model_dir, const staticlm_inspect_params* params, int* pass, char* report,
                                 size_t capacity, size_t* size_needed) {
  return boundary("staticlm_inspect", [&] {
    require(model_dir, "model_dir");
    require(size_needed, "size_needed");
    if (report == nullptr && capacity > 0) throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "report is null but capacity is not 0"};
    staticlm::api::InspectOptions o;
    o.model_dir = model_dir;
    if (params != nullptr) {
      if (params->config_file != nullptr) o.config_file = params->config_file;
      o.sets = string_list(params->sets, params->n_sets, "sets");
      if (params->prompt_ids == nullptr && params->n_prompt_ids > 0) {
        throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "prompt_ids is null but n_prompt_ids is not 0"};
      }
      if (params->prompt != nullptr && params->n_prompt_ids > 0) {
        throw CError{STATICLM_ERROR_INVALID_ARGUMENT, "give at most one of prompt and prompt_ids"};
      }
      if (params->prompt != nullptr) o.prompt = params->prompt;
      o.prompt_ids.assign(params->prompt_ids, params->prompt_ids + params->n_prompt_ids);
      if (params->image != nullptr) o.images.emplace_back(params->image);
      if (params->reference != nullptr) o.reference = params->reference;
      if (params->steps != nullptr) o.steps = params->steps;
      if (params->decode_steps >= 0) o.decode_steps = params->decode_steps;
      if (params->gen_steps >= 0) o.gen_steps = params->gen_steps;
      if (params->max_seq != 0) o.max_seq = params->max_seq;
      o.threads = params->threads;
    }
    const staticlm::api::InspectReport r = staticlm::api::inspect(o);
    if (pass != nullptr) *pass = r.pass ? 1 : 0;
    copy_out(r.json, report, capacity, size_needed);
  });
}

}  // extern "C"
