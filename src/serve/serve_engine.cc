#include "serve/serve_engine.h"

#include <algorithm>
#include <cmath>
#include <locale>
#include <random>
#include <sstream>
#include <span>

#include "base/json_limits.h"
#include "base/memory_size.h"
#include "base/base64.h"
#include "base/error.h"
#include "base/file.h"
#include "base/sha256.h"
#include "runtime/prefiller.h"
#include "runtime/dry_breakers.h"
#include "runtime/sampler_order.h"
#include "text/chat_render.h"
#include "text/detokenizer.h"
#include "text/grammar_constraint.h"
#include "text/json_constraint.h"
#include "text/thought_first_constraint.h"
#include "text/tool_call_grammar.h"
#include "text/tool_call_stream.h"
#include "text/tool_calls.h"
#include "text/utf8.h"
#include "vision/image_decode.h"

namespace staticlm {

namespace {

using ojson = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& param, const std::string& what) { throw RequestError{param + ": " + what, param}; }

// A field present and not null (clients send null for "not set").
bool given(const ojson& doc, const char* key) { return doc.contains(key) && !doc[key].is_null(); }

// llama.cpp's GBNF `grammar` field; "" is llama.cpp's default, none.
bool grammar_given(const ojson& doc) {
  return given(doc, "grammar") && !(doc["grammar"].is_string() && doc["grammar"].get<std::string>().empty());
}

// A field that is true or false; absent or null is false. param names it in the error.
bool boolean_field(const ojson& doc, const char* key, const std::string& param) {
  if (!given(doc, key)) return false;
  if (!doc[key].is_boolean()) bad(param, "expected true or false");
  return doc[key].get<bool>();
}

double number_field(const ojson& doc, const char* key) {
  const ojson& v = doc[key];
  if (!v.is_number()) bad(key, "expected a number, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x)) bad(key, "expected a finite number");
  return x;
}

std::int64_t integer_field(const ojson& doc, const char* key, std::int64_t lo) {
  const ojson& v = doc[key];
  if (!v.is_number_integer()) bad(key, "expected an integer, got " + v.dump());
  const std::int64_t x = v.is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(v.get<std::uint64_t>(), INT64_MAX))
                                                : v.get<std::int64_t>();
  if (x < lo) bad(key, "must be at least " + std::to_string(lo) + ", got " + std::to_string(x));
  return x;
}

// 64 random bits from the operating system's source.
std::uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) | rd();
}

void check_messages(const ojson& messages) {
  if (!messages.is_array() || messages.empty()) bad("messages", "expected a non-empty array of messages");
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    const ojson& m = messages[i];
    if (!m.is_object()) bad(at, "expected an object with \"role\" and \"content\"");
    if (!m.contains("role") || !m["role"].is_string()) bad(at + ".role", "expected a string");
    if (!m.contains("content")) continue;
    const ojson& c = m["content"];
    if (c.is_string() || c.is_null()) continue;
    if (!c.is_array()) bad(at + ".content", "expected a string or an array of parts");
    for (std::size_t j = 0; j < c.size(); ++j) {
      const std::string part = at + ".content[" + std::to_string(j) + "]";
      if (!c[j].is_object() || !c[j].contains("type") || !c[j]["type"].is_string()) bad(part, "expected an object with a string \"type\"");
      const std::string type = c[j]["type"].get<std::string>();
      if (type == "image_url" || type == "image") continue;  // read by take_images
      if (type != "text") bad(part + ".type", "'" + type + "' is not supported (text and image_url parts)");
      if (!c[j].contains("text") || !c[j]["text"].is_string()) bad(part + ".text", "expected a string");
    }
  }
}

// An assistant message's tool_calls as OpenAI sends them: function.arguments is a JSON string.
// Chat templates are written for transformers, where arguments are a mapping (Gemma 4's renders
// a mapping in its own call syntax and prints a string as it is), so a string holding a JSON
// object becomes that object, as vLLM and llama.cpp do; any other string stays a string.
void read_tool_call_arguments(ojson& messages) {
  for (std::size_t i = 0; i < messages.size(); ++i) {
    ojson& m = messages[i];
    if (!m.contains("tool_calls") || m["tool_calls"].is_null()) continue;
    const std::string at = "messages[" + std::to_string(i) + "].tool_calls";
    ojson& calls = m["tool_calls"];
    if (!calls.is_array()) bad(at, "expected an array of tool calls");
    for (std::size_t j = 0; j < calls.size(); ++j) {
      const std::string call = at + "[" + std::to_string(j) + "]";
      if (!calls[j].is_object()) bad(call, "expected an object with \"function\"");
      if (!calls[j].contains("function")) continue;
      ojson& fn = calls[j]["function"];
      if (!fn.is_object()) bad(call + ".function", "expected an object with \"name\" and \"arguments\"");
      if (fn.contains("name") && !fn["name"].is_string()) bad(call + ".function.name", "expected a string");
      if (!fn.contains("arguments")) continue;
      ojson& args = fn["arguments"];
      if (args.is_string()) {
        const std::string& text = args.get_ref<const std::string&>();
        try {
          check_json_limits(text, call + ".function.arguments", kTemplateValueLimits);
        } catch (const Error& e) {
          throw RequestError{e.what(), call + ".function.arguments"};
        }
        ojson parsed = ojson::parse(text, nullptr, false);
        if (parsed.is_object()) args = std::move(parsed);
      } else if (!args.is_object() && !args.is_null()) {
        bad(call + ".function.arguments", "expected a JSON string or an object");
      }
    }
  }
}

// Where `content` may be shown up to: before any stop string in it, withholding `hold` bytes
// (which may begin one), on a UTF-8 character boundary.
std::size_t releasable(const std::string& content, std::size_t hold, const std::vector<std::string>& stops) {
  std::size_t end = content.size() > hold ? content.size() - hold : 0;
  for (const std::string& s : stops) end = std::min(end, content.find(s));
  while (end > 0 && end < content.size() && (static_cast<unsigned char>(content[end]) & 0xC0) == 0x80) --end;
  return end;
}

// The image source of an image part: OpenAI's {"type": "image_url", "image_url": {"url": U}}
// (or "image_url": U), or {"type": "image", "url" | "image" | "path": U}; `param` names it.
std::string image_source(const ojson& part, const std::string& at, std::string& param) {
  if (part["type"] == "image_url") {
    const ojson& u = part.contains("image_url") ? part["image_url"] : ojson();
    if (u.is_string()) return param = at + ".image_url", u.get<std::string>();
    if (u.is_object() && u.contains("url") && u["url"].is_string()) return param = at + ".image_url.url", u["url"].get<std::string>();
    bad(at + ".image_url", "expected {\"url\": \"data:image/...;base64,...\"} or a URL string");
  }
  for (const char* key : {"url", "image", "path"}) {
    if (part.contains(key) && part[key].is_string()) return param = at + "." + key, part[key].get<std::string>();
  }
  bad(at, "an image part needs \"url\", \"image\" or \"path\" (a string)");
}

// The encoded image bytes a URL names: a base64 data: URL, or (allow_local) a file:// URL or a path.
std::vector<std::uint8_t> image_bytes(const std::string& url, const std::string& param, bool allow_local) {
  if (url.rfind("data:", 0) == 0) {
    const std::size_t comma = url.find(',');
    if (comma == std::string::npos || url.substr(0, comma).find(";base64") == std::string::npos) {
      bad(param, "a data: URL must be base64 (data:image/png;base64,...)");
    }
    try {
      return base64_decode(std::string_view(url).substr(comma + 1), param);
    } catch (const Error& e) {
      bad(param, std::string(e.what()).substr(param.size() + 2));
    }
  }
  if (url.rfind("http://", 0) == 0 || url.rfind("https://", 0) == 0) {
    bad(param, "remote URLs are not fetched; send the image as a data: URL");
  }
  if (!allow_local) bad(param, "local files are refused; start the server with --allow-local-files, or send a data: URL");
  const std::string path = url.rfind("file://", 0) == 0 ? url.substr(7) : url;
  if (!file_exists(path)) bad(param, "no such file: " + path);
  const std::string data = read_file(path);
  return {data.begin(), data.end()};
}

// Decodes every image part of `messages` and rewrites it to {"type": "image"}, the part the chat
// template renders as <|image|>. At most one image: the static layout holds one span.
std::vector<RgbImage> take_images(ojson& messages, const ImageIntake& intake, std::string& key) {
  std::vector<RgbImage> images;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    ojson& m = messages[i];
    if (!m.contains("content") || !m["content"].is_array()) continue;
    for (std::size_t j = 0; j < m["content"].size(); ++j) {
      ojson& part = m["content"][j];
      if (part["type"] != "image_url" && part["type"] != "image") continue;
      const std::string at = "messages[" + std::to_string(i) + "].content[" + std::to_string(j) + "]";
      if (!intake.builder) bad(at, intake.refusal);
      if (!images.empty()) bad(at, "one image per conversation: the static profile holds one image span");
      std::string param;
      const std::string url = image_source(part, at, param);
      const std::vector<std::uint8_t> bytes = image_bytes(url, param, intake.allow_local_files);
      try {
        images.push_back(decode_image(bytes, param));
      } catch (const Error& e) {
        throw RequestError{e.what(), param};
      }
      key = sha256_hex(bytes);
      part = ojson{{"type", "image"}};
    }
  }
  return images;
}

}  // namespace

std::string error_json(int code, const std::string& message, const std::string& type, const std::string& param) {
  ojson e = {{"code", code}, {"message", message}, {"type", type}, {"param", param.empty() ? ojson() : ojson(param)}};
  return ojson{{"error", e}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

JobFailure job_failure(const ChatJob& job) {
  if (job.shut_down) return {503, error_json(503, job.error, "unavailable_error")};
  if (job.request_error) return {400, error_json(400, job.error, "invalid_request_error")};
  return {500, error_json(500, "generation failed: " + job.error, "server_error")};
}

namespace {

// The body as a JSON object (limits checked first).
ojson parse_body(const std::string& body) {
  ojson doc;
  try {
    check_json_limits(body, "body", kTemplateValueLimits);
    doc = ojson::parse(body);
  } catch (const ojson::exception& e) {
    throw RequestError{std::string("body: not valid JSON (") + e.what() + ")", ""};
  } catch (const Error& e) {
    throw RequestError{e.what(), ""};
  }
  if (!doc.is_object()) throw RequestError{"body: expected a JSON object", ""};
  return doc;
}

// OpenAI's logit_bias, {"TOKEN_ID": BIAS}, or llama.cpp's [[TOKEN_ID, BIAS], ...]; as llama.cpp, a
// key that is not a token id is text whose tokens all get the bias, and a bias of false bans
// the token. Biases in OpenAI's [-100, 100].
void parse_logit_bias(const ojson& v, const Tokenizer& tok, SamplingOptions& s) {
  const auto add = [&](const std::string& at, const ojson& token, const ojson& bias) {
    float b = -INFINITY;
    if (!(bias.is_boolean() && !bias.get<bool>())) {
      if (!bias.is_number()) bad(at, "expected a number in [-100, 100] or false (banned), got " + bias.dump());
      const double x = bias.get<double>();
      if (!(x >= -100 && x <= 100)) bad(at, "expected a number in [-100, 100] or false (banned), got " + bias.dump());
      b = static_cast<float>(x);
    }
    std::vector<std::int64_t> ids;
    if (token.is_number_integer()) {
      ids.push_back(token.is_number_unsigned() ? static_cast<std::int64_t>(std::min<std::uint64_t>(token.get<std::uint64_t>(), INT64_MAX))
                                               : token.get<std::int64_t>());
    } else if (token.is_string()) {
      const std::string text = token.get<std::string>();
      const bool digits = !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
      if (digits) {
        ids.push_back(std::stoll(text));
      } else {
        if (text.size() > 4096) bad(at, "a token text longer than 4096 bytes");
        for (int id : tok.encode(text)) ids.push_back(id);
        if (ids.empty()) bad(at, "the text \"\" has no tokens");
      }
    } else {
      bad(at, "expected a token id or a text, got " + token.dump());
    }
    for (std::int64_t id : ids) {
      if (id < 0 || id >= tok.id_limit()) {
        bad(at, "token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(tok.id_limit()) + ")");
      }
      s.logit_bias.emplace_back(id, b);
    }
  };
  if (v.is_object()) {
    if (v.size() > static_cast<std::size_t>(tok.id_limit())) bad("logit_bias", "more entries than tokens");
    for (const auto& [key, bias] : v.items()) add("logit_bias." + key, ojson(key), bias);
  } else if (v.is_array()) {
    if (v.size() > static_cast<std::size_t>(tok.id_limit())) bad("logit_bias", "more entries than tokens");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string at = "logit_bias[" + std::to_string(i) + "]";
      if (!v[i].is_array() || v[i].size() != 2) bad(at, "expected [token id or text, bias]");
      add(at, v[i][0], v[i][1]);
    }
  } else {
    bad("logit_bias", "expected an object {\"TOKEN_ID\": BIAS} or an array of [TOKEN_ID, BIAS]");
  }
}

// OpenAI's response_format ({"type": "text" | "json_object" | "json_schema", "json_schema":
// {"schema": S}}; llama.cpp's json_object may carry "schema") or llama.cpp's top-level json_schema;
// null for free text.
std::shared_ptr<const JsonSchema> response_schema(const ojson& doc) {
  const auto compile = [](const ojson& schema, const std::string& param) {
    try {
      return std::make_shared<const JsonSchema>(JsonSchema::parse(schema.dump(), param));
    } catch (const Error& e) {
      throw RequestError{e.what(), param};  // the message names param and the keyword's place
    }
  };
  if (given(doc, "json_schema") && !given(doc, "response_format")) return compile(doc["json_schema"], "json_schema");
  const ojson& rf = doc["response_format"];
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    bad("response_format", "expected an object with \"type\": \"text\", \"json_object\" or \"json_schema\"");
  }
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return nullptr;
  if (type == "json_object") {
    if (given(rf, "schema")) return compile(rf["schema"], "response_format.schema");
    return std::make_shared<const JsonSchema>(JsonSchema::any_object());
  }
  if (type != "json_schema") bad("response_format.type", "'" + type + "' is not text, json_object or json_schema");
  const ojson* holder = given(rf, "json_schema") ? &rf["json_schema"] : &rf;  // some clients put schema beside type
  if (!holder->is_object() || !given(*holder, "schema")) bad("response_format.json_schema.schema", "required");
  return compile((*holder)["schema"], holder == &rf ? "response_format.schema" : "response_format.json_schema.schema");
}

// llama.cpp's DRY fields; the breakers become token ids again when the request changes DRY.
void parse_dry_fields(const ojson& doc, const RequestContext& context, SamplingOptions& s) {
  bool changed = false;
  if (given(doc, "dry_multiplier")) {
    s.dry_multiplier = number_field(doc, "dry_multiplier");
    changed = true;
  }
  if (given(doc, "dry_base")) s.dry_base = number_field(doc, "dry_base");
  if (given(doc, "dry_allowed_length")) s.dry_allowed_length = integer_field(doc, "dry_allowed_length", 1);
  if (given(doc, "dry_penalty_last_n")) s.dry_penalty_last_n = integer_field(doc, "dry_penalty_last_n", -1);
  if (given(doc, "dry_sequence_breakers")) {
    const ojson& b = doc["dry_sequence_breakers"];
    if (!b.is_array()) bad("dry_sequence_breakers", "expected an array of strings");
    s.dry_sequence_breakers.clear();
    for (const ojson& x : b) {
      if (!x.is_string() || x.get<std::string>().empty()) bad("dry_sequence_breakers", "expected an array of non-empty strings");
      s.dry_sequence_breakers.push_back(x.get<std::string>());
    }
    changed = true;
  }
  if (changed) {
    try {
      if (context.dry_breakers) {
        context.dry_breakers->resolve(s, "dry_sequence_breakers");
      } else {
        resolve_dry_breakers(s, context.tokenizer, "dry_sequence_breakers");
      }
    } catch (const Error& e) {
      throw RequestError{e.what(), "dry_sequence_breakers"};
    }
  }
}

// The fields chat and text completions share: model, n, streaming, sampling, max_tokens, stop.
GenerateOptions parse_generation_fields(const ojson& doc, const RequestContext& context, ChatJob& job) {
  if (doc.contains("model") && !doc["model"].is_string()) bad("model", "expected a string");
  if (given(doc, "n") && integer_field(doc, "n", 1) != 1) bad("n", "only 1 choice is supported");

  GenerateOptions g = context.defaults;
  SamplingOptions& s = g.sampling;
  job.stream = boolean_field(doc, "stream", "stream");
  if (given(doc, "stream_options")) {
    const ojson& so = doc["stream_options"];
    if (!so.is_object()) bad("stream_options", "expected an object");
    job.usage_chunk = boolean_field(so, "include_usage", "stream_options.include_usage");
  }
  // The numbers of the sampling fields; their ranges are validate_sampling_options' (checked
  // below, once for all of them). repeat_penalty is llama.cpp's name of repetition_penalty.
  for (const char* key : {"repetition_penalty", "repeat_penalty"}) {
    if (given(doc, key)) s.repetition_penalty = number_field(doc, key);
  }
  for (auto [key, target] : {std::pair{"presence_penalty", &s.presence_penalty},
                             std::pair{"frequency_penalty", &s.frequency_penalty}, std::pair{"temperature", &s.temperature},
                             std::pair{"top_p", &s.top_p}, std::pair{"min_p", &s.min_p},
                             std::pair{"top_n_sigma", &s.top_n_sigma}, std::pair{"typical_p", &s.typical_p},
                             std::pair{"xtc_probability", &s.xtc_probability}, std::pair{"xtc_threshold", &s.xtc_threshold},
                             std::pair{"mirostat_tau", &s.mirostat_tau}, std::pair{"mirostat_eta", &s.mirostat_eta},
                             std::pair{"dynatemp_range", &s.dynatemp_range}, std::pair{"dynatemp_exponent", &s.dynatemp_exponent}}) {
    if (given(doc, key)) *target = number_field(doc, key);
  }
  // llama-server's `samplers`: its names in order, or a string of its letters ("kpmt").
  if (given(doc, "samplers")) {
    const ojson& order = doc["samplers"];
    try {
      if (order.is_string()) {
        s.samplers = sampler_order_from_letters(order.get<std::string>(), "samplers");
      } else if (order.is_array()) {
        std::vector<std::string> names;
        for (const ojson& x : order) {
          if (!x.is_string()) bad("samplers", "expected an array of sampler names or a string of sampler letters");
          names.push_back(x.get<std::string>());
        }
        s.samplers = sampler_order_from_names(names, "samplers");
      } else {
        bad("samplers", "expected an array of sampler names or a string of sampler letters");
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kInvalidArgument) throw;
      throw RequestError{e.what(), "samplers"};  // "samplers: unknown sampler ..."
    }
  }
  if (given(doc, "repeat_last_n")) s.repeat_last_n = integer_field(doc, "repeat_last_n", -1);
  if (given(doc, "top_k")) s.top_k = integer_field(doc, "top_k", 0);
  // Past int's range it stays out of range (3) rather than wrapping into it.
  if (given(doc, "mirostat")) s.mirostat = static_cast<int>(std::min<std::int64_t>(integer_field(doc, "mirostat", 0), 3));
  parse_dry_fields(doc, context, s);
  // seed -1 (llama.cpp's) or none under a server without --seed: a fresh seed, so that asking
  // again ("regenerate") samples another reply.
  const std::int64_t seed = given(doc, "seed") ? integer_field(doc, "seed", -1) : context.random_seed ? -1 : static_cast<std::int64_t>(s.seed);
  s.seed = seed == -1 ? random_seed() : static_cast<std::uint64_t>(seed);
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (given(doc, key)) g.max_new_tokens = integer_field(doc, key, 1);
  }
  if (given(doc, "stop")) {
    const ojson& st = doc["stop"];
    g.stop_strings.clear();
    if (st.is_string()) {
      g.stop_strings.push_back(st.get<std::string>());
    } else if (st.is_array()) {
      for (const ojson& x : st) {
        if (!x.is_string()) bad("stop", "expected a string or an array of strings");
        g.stop_strings.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "expected a string or an array of strings");
    }
    for (const std::string& x : g.stop_strings) {
      if (x.empty()) bad("stop", "a stop string must not be empty");
    }
  }
  if (given(doc, "logit_bias")) parse_logit_bias(doc["logit_bias"], *context.tokenizer, s);
  // llama.cpp's lazy grammar waits for a trigger before it applies: not followed here, so
  // refused rather than applied from the start.
  if (boolean_field(doc, "grammar_lazy", "grammar_lazy")) {
    bad("grammar_lazy", "lazy grammars (applied once a trigger appears) are not supported; give the grammar alone");
  }
  const bool has_grammar = grammar_given(doc);
  if (has_grammar) {
    if (!doc["grammar"].is_string()) bad("grammar", "expected a string (a GBNF grammar)");
    if (given(doc, "json_schema") || (given(doc, "response_format") && response_schema(doc))) {
      bad("grammar", "give a grammar or a JSON Schema (response_format, json_schema), not both");
    }
    std::shared_ptr<const Grammar> grammar;
    try {
      grammar = std::make_shared<const Grammar>(
          parse_grammar(doc["grammar"].get<std::string>(), "grammar", context.tokenizer,
                        static_cast<std::int64_t>(context.tokenizer->token_index().bytes.size())));
    } catch (const Error& e) {
      throw RequestError{e.what(), "grammar"};  // the message gives the line and column
    }
    g.constraint = grammar_constraint_factory(std::move(grammar), *context.tokenizer, g.eos_token_ids);
  } else if (given(doc, "response_format") || given(doc, "json_schema")) {
    if (std::shared_ptr<const JsonSchema> schema = response_schema(doc)) {
      g.constraint = json_constraint_factory(std::move(schema), *context.tokenizer, g.eos_token_ids);
    } else {
      g.constraint = nullptr;
    }
  }
  // llama.cpp's: the end tokens are never sampled, the reply runs to max_tokens.
  if (boolean_field(doc, "ignore_eos", "ignore_eos")) {
    for (std::int64_t id : g.eos_token_ids) s.logit_bias.emplace_back(id, -INFINITY);
  }
  if (const auto p = check_sampling_options(s)) {
    // Named as the request named it.
    const std::string field =
        p->option == "repetition_penalty" && !given(doc, "repetition_penalty") && given(doc, "repeat_penalty")
            ? "repeat_penalty"
            : p->option;
    bad(field, p->value + " is out of range: expected " + p->expected);
  }

  return g;
}

// The ids of a prompt that must fit max_seq; one that cannot is refused without encoding all of it.
std::vector<int> encode_prompt(const Tokenizer& tok, const std::string& text, std::int64_t max_seq, const char* param) {
  Tokenizer::TokenCount count;
  std::optional<std::vector<int>> ids = tok.encode_at_most(text, static_cast<std::size_t>(std::max<std::int64_t>(max_seq - 1, 0)), false, &count);
  if (!ids) {
    bad(param, "the prompt has " + std::string(count.exact ? "" : "at least ") + std::to_string(count.tokens) +
                   " tokens but max_seq " + std::to_string(max_seq) +
                   " leaves room for " + std::to_string(max_seq - 1));
  }
  return std::move(*ids);
}

void check_prompt_length(std::size_t tokens, std::int64_t max_seq, const char* param) {
  if (tokens == 0) bad(param, "the prompt is empty");
  if (static_cast<std::int64_t>(tokens) > max_seq - 1) {
    bad(param, "the prompt has " + std::to_string(tokens) + " tokens but max_seq " + std::to_string(max_seq) +
                   " leaves room for " + std::to_string(max_seq - 1));
  }
}

}  // namespace

namespace {

// The chat template's rendering of a request's messages and tools; image parts are decoded into
// `images` (their hash into image_key) and become {"type": "image"} for the template.
std::string render_request_chat(const ojson& doc, const RequestContext& context, std::vector<RgbImage>& images,
                                std::string& image_key) {
  if (!doc.contains("messages")) bad("messages", "required");
  check_messages(doc["messages"]);
  // Tool schemas go to the chat template as `tools` (tool_choice: apply_tool_choice).
  ojson tools;
  if (given(doc, "tools")) {
    tools = doc["tools"];
    if (!tools.is_array()) bad("tools", "expected an array of tool schemas");
    for (std::size_t i = 0; i < tools.size(); ++i) {
      if (!tools[i].is_object()) bad("tools[" + std::to_string(i) + "]", "expected an object (a tool schema)");
    }
  }
  // vLLM's and llama.cpp's chat_template_kwargs: more template variables (enable_thinking, ...).
  ojson kwargs;
  if (given(doc, "chat_template_kwargs")) {
    kwargs = doc["chat_template_kwargs"];
    if (!kwargs.is_object()) bad("chat_template_kwargs", "expected an object of template variables");
  }
  ChatRenderRequest r;
  r.model_dir = context.model_dir;
  r.template_file = context.chat_template;
  r.vars = context.template_vars;
  r.conversation.tools = tools;
  r.conversation.messages = doc["messages"];
  read_tool_call_arguments(r.conversation.messages);
  r.conversation_name = "messages";
  // llama.cpp's field: false renders the conversation without opening a model turn.
  if (given(doc, "add_generation_prompt")) r.add_generation_prompt = boolean_field(doc, "add_generation_prompt", "add_generation_prompt");
  images = take_images(r.conversation.messages, context.images, image_key);
  try {
    if (context.renderer) {
      return context.renderer->render(r.conversation, r.conversation_name, r.add_generation_prompt, kwargs).text;
    }
    // No renderer (the checkpoint's own template does not parse): render_chat takes "KEY=JSON".
    if (kwargs.is_object()) {
      for (const auto& [key, value] : kwargs.items()) r.vars.push_back(key + "=" + value.dump());
    }
    return render_chat(r).text;
  } catch (const Error& e) {
    throw RequestError{e.what(), "messages"};
  }
}

// Whether the template is asked to turn thinking on: enable_thinking in the request's
// chat_template_kwargs, else in --chat-template-kwargs, truthy as Jinja reads it.
bool thinking_requested(const ojson& doc, const RequestContext& context) {
  if (given(doc, "chat_template_kwargs") && doc["chat_template_kwargs"].is_object() &&
      doc["chat_template_kwargs"].contains("enable_thinking")) {
    return truthy(doc["chat_template_kwargs"]["enable_thinking"]);
  }
  return thinking_enabled(context.template_vars);
}

// OpenAI's tool_choice (text/tool_call_grammar.h), as a string or
// {"type": "function", "function": {"name": N}}; parallel_tool_calls false: exactly one call.
// With thinking on, a forced call may follow a thought.
void apply_tool_choice(const ojson& doc, const RequestContext& context, GenerateOptions& g) {
  const bool parallel = !given(doc, "parallel_tool_calls") || boolean_field(doc, "parallel_tool_calls", "parallel_tool_calls");
  if (!given(doc, "tool_choice")) return;
  const ojson& c = doc["tool_choice"];
  ToolChoice choice;
  if (c.is_object()) {
    if (!c.contains("type") || c["type"] != "function") bad("tool_choice.type", "expected \"function\"");
    if (!c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string() || c["function"]["name"].get<std::string>().empty()) {
      bad("tool_choice.function.name", "expected the name of one of the tools");
    }
    choice = {ToolChoice::Mode::kFunction, c["function"]["name"].get<std::string>()};
  } else if (c.is_string() && (c == "auto" || c == "none" || c == "required")) {
    choice = tool_choice_from_text(c.get<std::string>());
  } else {
    bad("tool_choice", "expected \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  }
  const bool forced = choice.mode == ToolChoice::Mode::kRequired || choice.mode == ToolChoice::Mode::kFunction;
  if (forced && g.constraint) bad("tool_choice", "a forced tool call cannot be combined with grammar, json_schema or response_format");
  const Tokenizer& tok = *context.tokenizer;
  try {
    const ToolChoiceConstraint constraint =
        tool_choice_constraint(given(doc, "tools") ? doc["tools"] : ojson::array(), choice, parallel, "tool_choice",
                               thinking_requested(doc, context));
    if (constraint.ban_call_open) {
      const int open = tok.token_to_id(kToolCallOpen);
      if (open >= 0) g.sampling.logit_bias.emplace_back(open, -INFINITY);
    }
    if (constraint.grammar.empty()) return;
    auto grammar = std::make_shared<const Grammar>(
        parse_grammar(constraint.grammar, "tool_choice", &tok, static_cast<std::int64_t>(tok.token_index().bytes.size())));
    g.constraint = grammar_constraint_factory(std::move(grammar), tok, g.eos_token_ids);
  } catch (const Error& e) {
    throw RequestError{e.what(), "tool_choice"};
  }
}

}  // namespace

void parse_chat_request(const std::string& body, const RequestContext& context, ChatJob& job) {
  const Tokenizer& tok = *context.tokenizer;
  const ImageIntake& intake = context.images;
  const ojson doc = parse_body(body);
  std::vector<RgbImage> images;
  const std::string text = render_request_chat(doc, context, images, job.image_key);
  GenerateOptions g = parse_generation_fields(doc, context, job);
  apply_tool_choice(doc, context, g);
  // With thinking on, a JSON reply (response_format, json_schema) may follow one thought, as a
  // forced tool call may; a GBNF grammar is the request's own, thought or not.
  if (g.constraint && !grammar_given(doc) && (given(doc, "response_format") || given(doc, "json_schema")) && thinking_requested(doc, context)) {
    g.constraint = thought_first_factory(std::move(g.constraint), tok, g.eos_token_ids);
  }
  // llama.cpp's reasoning_format: "none" leaves a thought channel in the content as text; the
  // default (and "auto", "deepseek", "deepseek-legacy") answers it as reasoning_content.
  job.take_reasoning = context.take_reasoning;  // the server's --reasoning-format
  if (given(doc, "reasoning_format")) {
    const ojson& f = doc["reasoning_format"];
    if (!f.is_string() || (f != "none" && f != "auto" && f != "deepseek" && f != "deepseek-legacy")) {
      bad("reasoning_format", "expected \"none\", \"auto\", \"deepseek\" or \"deepseek-legacy\"");
    }
    job.take_reasoning = f != "none";
  }
  // OpenAI's logprobs: each content token's log-probability; top_logprobs (only with logprobs)
  // that many likeliest alternatives as well.
  job.logprobs = boolean_field(doc, "logprobs", "logprobs");
  if (given(doc, "top_logprobs")) {
    const std::int64_t top = integer_field(doc, "top_logprobs", 0);
    if (top > kMaxTopLogprobs) bad("top_logprobs", "must be at most " + std::to_string(kMaxTopLogprobs));
    if (!job.logprobs) bad("top_logprobs", "needs \"logprobs\": true");
    job.top_logprobs = static_cast<int>(top);
  }
  job.options = std::move(g);
  if (!images.empty()) {
    // The builder expands <|image|> to the soft-token span, checks it lands on the profile's
    // span and pads to max_seq; its message names the rule a prompt breaks.
    try {
      auto in = std::make_shared<StaticInputs>(intake.builder->build(text, images));
      const auto raw = in->raw_input_ids.as<std::int64_t>();
      job.prompt.assign(raw.begin(), raw.end());
      job.image_span_end = intake.builder->options().profile.visual_end_idx();
      job.image_inputs = std::move(in);
    } catch (const Error& e) {
      throw RequestError{e.what(), "messages"};
    }
    return;
  }
  const std::vector<int> ids = encode_prompt(tok, text, context.max_seq, "messages");
  check_prompt_length(ids.size(), context.max_seq, "messages");
  job.prompt.assign(ids.begin(), ids.end());
}

namespace {

void parse_completion_doc(const ojson& doc, const RequestContext& context, ChatJob& job) {
  const Tokenizer& tok = *context.tokenizer;
  if (!given(doc, "prompt")) bad("prompt", "required");
  // One prompt: a string, or token ids; OpenAI's lists of several prompts only with one entry.
  ojson prompt = doc["prompt"];
  if (prompt.is_array() && prompt.size() == 1 && (prompt[0].is_string() || prompt[0].is_array())) prompt = ojson(prompt[0]);
  if (prompt.is_string()) {
    // As given, as `run -p` reads it: special tokens written in it (<bos>, <|turn>) are read as
    // such and nothing is added (Gemma 4's tokenizer_config.json: add_bos_token false).
    try {
      const std::vector<int> ids = encode_prompt(tok, prompt.get<std::string>(), context.max_seq, "prompt");
      job.prompt.assign(ids.begin(), ids.end());
    } catch (const Error& e) {
      bad("prompt", e.what());
    }
  } else if (prompt.is_array()) {
    for (std::size_t i = 0; i < prompt.size(); ++i) {
      const ojson& x = prompt[i];
      const std::string at = "prompt[" + std::to_string(i) + "]";
      if (!x.is_number_integer()) bad(at, "expected a token id (an integer) or one string prompt");
      const std::int64_t id = x.get<std::int64_t>();
      if (id < 0 || id >= tok.id_limit()) {
        bad(at, "token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(tok.id_limit()) + ")");
      }
      job.prompt.push_back(id);
    }
  } else {
    bad("prompt", "expected a string, an array of token ids, or an array of one of them");
  }
  check_prompt_length(job.prompt.size(), context.max_seq, "prompt");
  GenerateOptions g = parse_generation_fields(doc, context, job);
  // The legacy logprobs: an integer, that many alternatives per token (0: the chosen one only).
  if (given(doc, "logprobs")) {
    const std::int64_t top = integer_field(doc, "logprobs", 0);
    if (top > kMaxTopLogprobs) bad("logprobs", "must be at most " + std::to_string(kMaxTopLogprobs));
    job.logprobs = true;
    job.top_logprobs = static_cast<int>(top);
  }
  if (given(doc, "echo") && !(doc["echo"].is_boolean() && !doc["echo"].get<bool>())) {
    bad("echo", "not supported (the prompt is not repeated in the reply)");
  }
  if (given(doc, "suffix") && !(doc["suffix"].is_string() && doc["suffix"].get<std::string>().empty())) {
    bad("suffix", "not supported (no insertion; Gemma 4 has no fill-in-the-middle format)");
  }
  if (given(doc, "best_of") && integer_field(doc, "best_of", 1) != 1) bad("best_of", "only 1 is supported");
  job.text_completion = true;
  job.options = std::move(g);
}

}  // namespace

void parse_completion_request(const std::string& body, const RequestContext& context, ChatJob& job) {
  parse_completion_doc(parse_body(body), context, job);
}

void parse_llama_completion_request(const std::string& body, const RequestContext& context, ChatJob& job) {
  ojson doc = parse_body(body);
  // llama.cpp's n_probs: each reply token's log-probability and the n_probs likeliest tokens, from
  // the model's logits before any sampling setting (llama.cpp's default; its
  // post_sampling_probs, the sampler's probabilities, is refused).
  if (given(doc, "n_probs")) {
    const std::int64_t n = integer_field(doc, "n_probs", 0);
    if (n < 0 || n > kMaxNProbs) bad("n_probs", "must be 0 to " + std::to_string(kMaxNProbs));
    job.logprobs = n > 0;
    job.top_logprobs = static_cast<int>(n);
    doc.erase("n_probs");
  }
  if (given(doc, "post_sampling_probs") && boolean_field(doc, "post_sampling_probs", "post_sampling_probs")) {
    bad("post_sampling_probs", "not supported: n_probs gives the model's probabilities before sampling");
  }
  doc.erase("post_sampling_probs");
  if (given(doc, "logprobs") && !(doc["logprobs"].is_number_integer() && doc["logprobs"].get<std::int64_t>() == 0) &&
      !(doc["logprobs"].is_boolean() && !doc["logprobs"].get<bool>())) {
    bad("logprobs", "not a /completion field (llama.cpp's is \"n_probs\": N)");
  }
  doc.erase("logprobs");
  // llama.cpp's length: n_predict, else max_tokens; -1 (its default) runs until an end token or
  // a full cache.
  const char* length = given(doc, "n_predict") ? "n_predict" : given(doc, "max_tokens") ? "max_tokens" : nullptr;
  if (length != nullptr) {
    const std::int64_t n = integer_field(doc, length, -1);
    if (n == 0) bad(length, "must be -1 (no limit but the cache) or at least 1");
    doc["max_tokens"] = n == -1 ? kNoTokenLimit : n;
    doc.erase("n_predict");
  }
  job.return_tokens = boolean_field(doc, "return_tokens", "return_tokens");
  parse_completion_doc(doc, context, job);
}

std::string apply_template_reply(const std::string& body, const RequestContext& context) {
  const ojson doc = parse_body(body);
  std::vector<RgbImage> images;
  std::string image_key;
  return ojson{{"prompt", render_request_chat(doc, context, images, image_key)}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

namespace {

// The server's sampling defaults in llama.cpp's names (/props, /slots).
ojson default_params_json(const RequestContext& context) {
  const GenerateOptions& g = context.defaults;
  const SamplingOptions& s = g.sampling;
  const std::int64_t n_predict = g.max_new_tokens == kNoTokenLimit ? -1 : g.max_new_tokens;
  return {{"n_predict", n_predict},          {"temperature", s.temperature},
                        {"top_k", s.top_k},                {"top_p", s.top_p},
                        {"min_p", s.min_p},                {"repeat_penalty", s.repetition_penalty},
                        {"repeat_last_n", s.repeat_last_n},
                        {"presence_penalty", s.presence_penalty}, {"frequency_penalty", s.frequency_penalty},
                        {"top_n_sigma", s.top_n_sigma},    {"typical_p", s.typical_p},
                        {"xtc_probability", s.xtc_probability}, {"xtc_threshold", s.xtc_threshold},
                        {"mirostat", s.mirostat},          {"mirostat_tau", s.mirostat_tau},
                        {"mirostat_eta", s.mirostat_eta},
                        {"dynatemp_range", s.dynatemp_range}, {"dynatemp_exponent", s.dynatemp_exponent},
                        {"dry_multiplier", s.dry_multiplier}, {"dry_base", s.dry_base},
                        {"dry_allowed_length", s.dry_allowed_length}, {"dry_penalty_last_n", s.dry_penalty_last_n},
                        {"dry_sequence_breakers", s.dry_sequence_breakers},
                        {"seed", context.random_seed ? ojson(-1) : ojson(s.seed)}, {"stop", g.stop_strings}};
}

}  // namespace

std::string props_reply(const RequestContext& context, int slots) {
  const std::optional<ChatTemplateFile> chat_template = find_chat_template(context.model_dir, context.chat_template);
  const ojson props = {{"default_generation_settings", {{"n_ctx", context.max_seq}, {"params", default_params_json(context)}}},
                       {"total_slots", slots},
                       {"model_path", context.model_dir},
                       {"chat_template", chat_template ? chat_template->source : std::string()},
                       {"modalities", {{"vision", context.images.builder != nullptr}, {"audio", false}}}};
  return props.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string slots_reply(const RequestContext& context, const std::vector<ServeEngine::SlotState>& slots) {
  const ojson params = default_params_json(context);
  ojson out = ojson::array();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    out.push_back({{"id", i},
                   {"id_task", -1},
                   {"n_ctx", context.max_seq},
                   {"speculative", false},
                   {"is_processing", slots[i].processing},
                   {"params", params},
                   {"prompt", ""},
                   {"next_token", {{"has_next_token", slots[i].processing}, {"n_decoded", 0}}},
                   {"n_cached_tokens", slots[i].cached_tokens}});
  }
  return out.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string metrics_reply(const ServeEngine::Stats& s) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(17);
  const auto metric = [&](const char* name, const char* type, const char* help, double value) {
    out << "# HELP llamacpp:" << name << " " << help << "\n# TYPE llamacpp:" << name << " " << type << "\nllamacpp:" << name
        << " " << value << "\n";
  };
  const auto per_second = [](double tokens, double seconds) { return seconds > 0 ? tokens / seconds : 0.0; };
  metric("prompt_tokens_total", "counter", "Number of prompt tokens processed.", static_cast<double>(s.prompt_tokens));
  metric("prompt_seconds_total", "counter", "Prompt process time", s.prompt_seconds);
  metric("tokens_predicted_total", "counter", "Number of generation tokens processed.", static_cast<double>(s.predicted_tokens));
  metric("tokens_predicted_seconds_total", "counter", "Predict process time", s.predicted_seconds);
  metric("n_decode_total", "counter", "Total number of model calls (one per prompt, one per decode step).",
         static_cast<double>(s.model_calls));
  metric("prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         per_second(static_cast<double>(s.recent_prompt_tokens), s.recent_prompt_seconds));
  metric("predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         per_second(static_cast<double>(s.recent_predicted_tokens), s.recent_predicted_seconds));
  metric("requests_processing", "gauge", "Number of requests processing.", static_cast<double>(s.in_flight - s.waiting));
  metric("requests_deferred", "gauge", "Number of requests deferred.", static_cast<double>(s.waiting));
  return out.str();
}

std::string tokenize_reply(const std::string& body, const Tokenizer& tok) {
  const ojson doc = parse_body(body);
  if (!doc.contains("content") || !doc["content"].is_string()) bad("content", "expected a string");
  const bool add_special = boolean_field(doc, "add_special", "add_special");
  const bool with_pieces = boolean_field(doc, "with_pieces", "with_pieces");
  const bool parse_special = !given(doc, "parse_special") || boolean_field(doc, "parse_special", "parse_special");
  std::vector<int> ids;
  try {
    ids = tok.encode(doc["content"].get<std::string>(), add_special, parse_special);
  } catch (const Error& e) {
    bad("content", e.what());
  }
  ojson tokens = ojson::array();
  for (const int id : ids) {
    if (!with_pieces) {
      tokens.push_back(id);
      continue;
    }
    // As llama-server: a piece that is not UTF-8 on its own (a byte-fallback token, part of a
    // character) is its bytes.
    const std::string piece = tok.token_bytes(id);
    if (utf8_first_invalid(piece) == std::string::npos) {
      tokens.push_back({{"id", id}, {"piece", piece}});
    } else {
      tokens.push_back({{"id", id}, {"piece", std::vector<unsigned char>(piece.begin(), piece.end())}});
    }
  }
  return ojson{{"tokens", std::move(tokens)}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string detokenize_reply(const std::string& body, const Tokenizer& tok) {
  const ojson doc = parse_body(body);
  if (!doc.contains("tokens") || !doc["tokens"].is_array()) bad("tokens", "expected an array of token ids");
  std::vector<int> ids;
  for (std::size_t i = 0; i < doc["tokens"].size(); ++i) {
    const ojson& x = doc["tokens"][i];
    const std::string at = "tokens[" + std::to_string(i) + "]";
    if (!x.is_number_integer()) bad(at, "expected a token id (an integer)");
    const std::int64_t id = x.get<std::int64_t>();
    if (id < 0 || id >= tok.id_limit()) {
      bad(at, "token id " + std::to_string(id) + " outside the vocabulary [0, " + std::to_string(tok.id_limit()) + ")");
    }
    ids.push_back(static_cast<int>(id));
  }
  return ojson{{"content", tok.decode(ids)}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

ServeEngine::ServeEngine(Backend& backend, const Checkpoint& ck, const Tokenizer& tok, const ServeOptions& options)
    : tok_(tok), options_(options), slots_(static_cast<std::size_t>(options.slots)),
      slot_states_(static_cast<std::size_t>(options.slots)) {
  // Each slot holds its own runtime and so its own prefill masks.
  const std::int64_t max_seq = backend.profile().max_seq;
  check_fits_memory(static_cast<double>(options.slots) * prefill_mask_bytes(ck.layers(), max_seq),
                    "--slots " + std::to_string(options.slots) + " with max_seq " + std::to_string(max_seq) +
                        ": the slots' prefill attention masks ([1, 1, max_seq, max_seq] f32)");
  RuntimeOptions ro;
  ro.pool = options.pool;  // used from the engine's one worker thread, as the back end uses it
  for (Slot& s : slots_) s.runtime = Runtime::create(backend, ck.config(), ck.layers(), ro);
  worker_ = std::thread([this] { loop(); });
}

ServeEngine::~ServeEngine() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

bool ServeEngine::submit(std::shared_ptr<ChatJob> job) {
  {
    std::lock_guard l(mu_);
    if (shutting_down_) return false;
    if (in_flight_ >= options_.queue + 1) {
      ++stats_.rejected;
      return false;
    }
    ++in_flight_;
    waiting_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void ServeEngine::shut_down() {
  std::lock_guard l(mu_);
  shutting_down_ = true;
  for (const auto& job : waiting_) job->shut_down = true;
  if (running_) running_->shut_down = true;
}

bool ServeEngine::shutting_down() {
  std::lock_guard l(mu_);
  return shutting_down_;
}

ServeEngine::Stats ServeEngine::stats_locked() const {
  Stats s = stats_;
  s.in_flight = in_flight_;
  s.waiting = static_cast<std::int64_t>(waiting_.size());
  return s;
}

ServeEngine::Stats ServeEngine::stats() {
  std::lock_guard l(mu_);
  return stats_locked();
}

ServeEngine::Stats ServeEngine::take_metrics() {
  std::lock_guard l(mu_);
  const Stats s = stats_locked();
  stats_.recent_prompt_tokens = stats_.recent_predicted_tokens = 0;
  stats_.recent_prompt_seconds = stats_.recent_predicted_seconds = 0;
  return s;
}

std::vector<ServeEngine::SlotState> ServeEngine::slot_states() {
  std::lock_guard l(mu_);
  return slot_states_;
}

void ServeEngine::loop() {
  for (;;) {
    std::shared_ptr<ChatJob> job;
    {
      std::unique_lock l(mu_);
      cv_.wait(l, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      job = std::move(waiting_.front());
      waiting_.pop_front();
      running_ = job;
    }
    if (job->cancelled) {
      job->error = "cancelled: the client went away";
    } else if (!job->shut_down) {
      run(*job);
    }
    // Stopped or never run because the server stops (a reply that ended first stays whole).
    if (job->shut_down && (!job->error.empty() || job->finish_reason == "cancelled" || job->finish_reason.empty())) {
      std::lock_guard l(job->mu);
      job->error = "the server is shutting down: the request was stopped";
    }
    {
      // Freed before the client hears of it, so its next request finds the room.
      std::lock_guard l(mu_);
      running_.reset();
      --in_flight_;
      if (job->error.empty() && job->finish_reason != "cancelled") {
        const std::int64_t prompt = static_cast<std::int64_t>(job->prompt.size()) - job->cached_tokens;
        stats_.prompt_tokens += prompt;
        stats_.recent_prompt_tokens += prompt;
        stats_.prompt_seconds += job->prompt_ms / 1000;
        stats_.recent_prompt_seconds += job->prompt_ms / 1000;
        stats_.predicted_tokens += job->completion_tokens();
        stats_.recent_predicted_tokens += job->completion_tokens();
        stats_.predicted_seconds += job->predicted_ms / 1000;
        stats_.recent_predicted_seconds += job->predicted_ms / 1000;
        stats_.model_calls += 1 + job->decode_steps;
      }
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        slot_states_[i] = {false, static_cast<std::int64_t>(slots_[i].tokens.size())};
      }
      ++(!job->error.empty() ? (job->cancelled || job->shut_down ? stats_.cancelled : job->request_error ? stats_.invalid : stats_.failed)
                             : (job->finish_reason == "cancelled" ? stats_.cancelled : stats_.completed));
    }
    {
      std::lock_guard l(job->mu);
      job->done = true;
      job->released = job->content.size();
    }
    job->cv.notify_all();
  }
}

void ServeEngine::run(ChatJob& job) {
  const std::vector<std::int64_t>& prompt = job.prompt;
  // The slot holding the longest prefix of the prompt; none: the least recently used one.
  // Only a slot holding the same image (or none, for none) can share a prefix.
  std::size_t best = 0, best_common = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].image_key != job.image_key) continue;
    const std::vector<std::int64_t>& t = slots_[i].tokens;
    const auto mm = std::mismatch(t.begin(), t.end(), prompt.begin(), prompt.end());
    const std::size_t common = static_cast<std::size_t>(mm.first - t.begin());
    if (common > best_common) best = i, best_common = common;
  }
  if (best_common == 0) {
    best = static_cast<std::size_t>(std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) {
                                      return a.last_used < b.last_used;
                                    }) - slots_.begin());
  }
  Slot& slot = slots_[best];
  slot.last_used = ++clock_;
  {
    std::lock_guard l(mu_);
    slot_states_[best].processing = true;
  }
  // At least one token is fed: its logits choose the first reply token. An image prompt whose
  // reused prefix would not cover the image span is prefilled whole (the span is only encoded
  // by the static prefill).
  std::size_t keep = std::min(best_common, prompt.size() - 1);
  if (job.image_inputs && static_cast<std::int64_t>(keep) < job.image_span_end) keep = 0;
  Runtime& rt = *slot.runtime;

  GenerateOptions g = job.options;
  std::unique_ptr<IncrementalDetokenizer> stop_text;
  std::size_t hold = 0;
  if (!g.stop_strings.empty()) {
    stop_text = std::make_unique<IncrementalDetokenizer>(tok_);
    g.token_text = [&](std::int64_t t) { return stop_text->push(static_cast<int>(t)); };
    for (const std::string& s : g.stop_strings) hold = std::max(hold, s.size() - 1);
  }
  // The text a client shows, the tool calls and the reasoning.
  ToolCallStream out(tok_, /*take_calls=*/!job.text_completion, job.take_reasoning);
  // With logprobs, each token's log-probability, computed from the logits that chose it; kept
  // for content tokens (not special tokens, not inside a tool call).
  TokenLogprob chosen;
  if (job.logprobs) {
    g.on_logits = [&](std::span<const float> logits, std::int64_t t) { chosen = token_logprob(logits, t, job.top_logprobs); };
  }
  const TokenCallback on_token = [&](std::int64_t t) {
    // The end token is not reply text (Gemma 4's <|tool_response> is not a control token).
    if (g.is_eos(t)) return true;
    const bool was_aside = out.in_call() || out.in_thought();
    const std::string piece = out.push(static_cast<int>(t));
    const bool content_token =
        job.logprobs && !was_aside && !out.in_call() && !out.in_thought() && !tok_.is_special(static_cast<int>(t));
    const std::string thought = out.take_reasoning();
    {
      std::lock_guard l(job.mu);
      job.content += piece;
      job.reasoning += thought;
      if (content_token) job.logprob_entries.push_back({std::move(chosen), job.content.size()});
      if (out.calls().size() > job.tool_calls.size()) job.tool_calls = out.calls();
      job.released = std::max(job.released, releasable(job.content, hold, g.stop_strings));
    }
    job.cv.notify_all();
    return !job.cancelled.load() && !job.shut_down.load();
  };
  // A client that goes away (or the server stopping) during a long prompt stops its prefill
  // before the next layer.
  g.should_stop = [&job] { return job.cancelled.load() || job.shut_down.load(); };
  try {
    slot.tokens.resize(keep);
    slot.image_key.clear();
    rt.rewind(static_cast<std::int64_t>(keep));
    GenerationResult r;
    if (job.image_inputs && keep == 0) {
      r = rt.generate(prefill_input(*job.image_inputs), g, on_token);
    } else {
      r = rt.generate_append(std::span(prompt).subspan(keep), prompt, g, on_token);
    }
    slot.image_key = job.image_key;
    slot.tokens = prompt;
    slot.tokens.insert(slot.tokens.end(), r.tokens.begin(), r.tokens.end());
    slot.tokens.resize(static_cast<std::size_t>(rt.past_len()));
    std::lock_guard l(job.mu);
    job.content += out.finish();
    job.reasoning += out.take_reasoning();
    job.tool_calls = out.calls();
    if (r.reason == StopReason::kStopString) {
      std::size_t cut = job.content.size();
      for (const std::string& s : g.stop_strings) {
        const std::size_t at = job.content.find(s);
        if (at < cut) {
          cut = at;
          job.stopping_word = s;
        }
      }
      job.content.resize(cut);
      // The tokens whose text reached into the stop string are not content.
      std::erase_if(job.logprob_entries, [&](const ChatJob::LogprobEntry& e) { return e.content_end > cut; });
    }
    const bool ended = r.reason == StopReason::kEos || r.reason == StopReason::kStopString;
    job.finish_reason = ended && !job.tool_calls.empty()                                   ? "tool_calls"
                        : ended                                                            ? "stop"
                        : r.reason == StopReason::kCallback                                 ? "cancelled"
                                                                                            : "length";
    job.cached_tokens = static_cast<std::int64_t>(keep);
    job.tokens = r.tokens;
    job.prompt_ms = r.stats.prefill_seconds * 1000;
    job.predicted_ms = r.stats.decode_seconds * 1000;
    job.decode_steps = r.stats.decode_steps;
  } catch (const StoppedByCaller&) {
    // The prompt given up part-way: the slot keeps the prefix it held (the same image's).
    rt.rewind(std::min(static_cast<std::int64_t>(keep), rt.past_len()));
    slot.tokens.resize(static_cast<std::size_t>(rt.past_len()));
    if (!slot.tokens.empty()) slot.image_key = job.image_key;
    std::lock_guard l(job.mu);
    job.error = "cancelled: the client went away";
  } catch (const std::exception& e) {
    slot.tokens.clear();
    slot.image_key.clear();
    rt.rewind(0);
    const auto* error = dynamic_cast<const Error*>(&e);
    std::lock_guard l(job.mu);
    job.error = e.what();
    job.request_error = error && error->kind() == ErrorKind::kInvalidArgument;
  }
}

}  // namespace staticlm
