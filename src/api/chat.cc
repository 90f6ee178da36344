// Chat: the orchestration `staticlm chat` used to hold, over runtime/conversation.h. One engine
// for the whole chat (the vision profile with ChatOptions::vision, else the text profile), since
// the cache it carries from turn to turn belongs to one runtime.
#include "staticlm/chat.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "api/engine.h"
#include "api/generate_params.h"
#include "api/guarded.h"
#include "api/one_call.h"
#include "api/model_impl.h"
#include "api/thread_count.h"
#include "api/token_stream.h"
#include "backends/backend_factory.h"
#include "base/error.h"
#include "base/file.h"
#include "base/sha256.h"
#include "runtime/conversation.h"
#include "runtime/prefiller.h"
#include "staticlm/model.h"
#include "text/chat_render.h"
#include "vision/image_decode.h"

namespace staticlm::api {

namespace {

// What a saved chat must match. The wording is the one files saved by earlier builds carry.
std::string chat_identity(const std::string& model_dir, std::int64_t max_seq, const std::string& profile) {
  const std::string name = std::filesystem::path(model_dir).lexically_normal().filename().string();
  const std::string sha = sha256_hex(read_file(path_join(model_dir, "config.json")));
  return "checkpoint '" + (name.empty() ? model_dir : name) + "' (config.json sha256 " + sha.substr(0, 16) +
         "), max_seq " + std::to_string(max_seq) + ", profile '" + profile + "'";
}

// Metadata key of a templated chat's messages in a saved file; a built-in chat's file has none.
constexpr const char* kMessagesKey = "messages";

}  // namespace

using ojson = nlohmann::ordered_json;

// A chat laid out by a Jinja template (ChatOptions::jinja / chat_template): the messages so far,
// rendered whole every turn, and the first turn's image while that turn is kept (each layout
// that holds it expands its placeholder again).
struct TemplatedTurns {
  std::unique_ptr<ChatRenderer> renderer;  // the template, parsed once, and its variables
  OverflowPolicy overflow = OverflowPolicy::kError;
  ojson messages = ojson::array();  // user and assistant messages, the system prompt not among them
  std::optional<RgbImage> image;
  // The image's soft-token count once the processor has run on it: later layouts expand its
  // placeholder without processing the pixels again, which only a refill of its span needs.
  std::optional<int> soft_tokens;

  // A context: its text, its tokens and, with an image, the processor's output (pixels included
  // only when `pixels`).
  struct Layout {
    std::string text;
    std::vector<std::int64_t> ids;
    std::optional<ProcessorBatch> batch;
    bool pixels = false;
  };
};

// Members are destroyed in reverse order: the conversation before the engine whose runtime it
// borrows, the engine before the pool and the recorder it uses.
struct Chat::Impl {
  std::atomic<bool> busy{false};  // a call runs (one_call.h)
  std::shared_ptr<const Model::Impl> model;
  SessionOptions options;
  RuntimeConfig config;  // max_seq resolved
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<inspect::Recorder> recorder;  // with record_dir
  std::unique_ptr<StaticInputBuilder> builder;  // with vision
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Conversation> conversation;
  std::unique_ptr<TemplatedTurns> templated;  // null: the built-in Gemma 4 format
  std::string identity;
  // What the getters answer, set when each call ends (publish): they may be read from another
  // thread, or from the token callback, while a call changes the conversation.
  std::atomic<std::int64_t> turns{0}, context_tokens{0}, past_len{0};
  std::atomic<bool> empty{true};
  void publish() noexcept;

  const staticlm::Tokenizer& tokenizer() const { return *model->tokenizer->tokenizer; }
  GenerateOptions generate_options(const GenerateParams& params) const;

  // One turn: `run(options, stream)` adds it to the conversation; the rest is the API's result.
  template <class Run>
  TurnResult turn(const GenerateParams& params, const TokenCallback& on_token, Run&& run);

  // A templated chat's turn: `user` (a message) after the messages so far; `image` with the first.
  TurnStats templated_turn(const ojson& user, std::optional<RgbImage> image, const GenerateOptions& g,
                           const staticlm::TokenCallback& stream);
  TemplatedTurns::Layout lay_out(const ojson& messages, const RgbImage* image) const;
};

void Chat::Impl::publish() noexcept {
  std::int64_t n = conversation->turns();
  if (templated) {
    n = std::count_if(templated->messages.begin(), templated->messages.end(), [](const ojson& m) {
      return m.is_object() && m.contains("role") && m["role"] == "user";
    });
  }
  turns = n;
  context_tokens = static_cast<std::int64_t>(conversation->tokens().size());
  past_len = engine->runtime->past_len();
  empty = conversation->empty();
}

namespace {

// A call on the chat, one at a time; the getters' counts are published when it ends.
auto one_call(Chat::Impl& impl) {
  return OneCallThen(impl.busy, "this chat", [&impl]() noexcept { impl.publish(); });
}

}  // namespace

Chat::Chat(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) { impl_->publish(); }
Chat::~Chat() = default;

std::unique_ptr<Chat> Model::chat(const SessionOptions& o, const ChatOptions& c) const {
  return guarded([&] {
    auto s = std::make_unique<Chat::Impl>();
    s->model = impl_;
    s->options = o;
    s->config = session_config(impl_->info, o);
    const RuntimeConfig& cfg = s->config;
    ConversationOptions co;
    co.system = c.system;
    co.overflow = c.overflow.empty() ? parse_overflow_policy(cfg.context_overflow, "context_overflow")
                                     : parse_overflow_policy(c.overflow, "overflow");
    const std::string& dir = impl_->info.dir;
    if (!impl_->tokenizer) invalid_argument("chat: " + dir + " has no tokenizer.json");

    SubgraphProfile profile;
    profile.max_seq = cfg.max_seq;
    profile.rope_sine = cfg.rope_sine;
    // Every turn after the first is an append, so the buckets are needed even when unset.
    profile.append_lengths = append_buckets_for(cfg, cfg.max_seq);
    std::string profile_name = "text";
    if (c.vision) {
      s->builder = StaticInputBuilder::create(dir, cfg, /*reserve_decode_slot=*/true);
      if (!s->builder->has_vision()) invalid_argument("chat: an image needs a model with a vision tower; " + dir + " is text-only");
      set_vision_profile(profile, s->builder->options().profile);
      profile_name = s->builder->options().profile.name;
    }
    s->pool = std::make_unique<ThreadPool>(thread_count(o.threads));
    s->engine = make_engine(*impl_, o, cfg, profile, *s->pool, s->recorder);
    s->conversation = std::make_unique<Conversation>(*s->engine->runtime, s->tokenizer(), co);
    if (c.jinja || !c.chat_template.empty()) {
      // Found (or refused) now, not at the first turn; render_chat would fall back to the
      // built-in format where there is none.
      if (!find_chat_template(dir, c.chat_template)) {
        invalid_argument("chat: " + dir + " has no chat template (chat_template.jinja, or tokenizer_config.json's "
                         "chat_template); give one with --chat-template, or chat in the built-in format (no --jinja)");
      }
      auto t = std::make_unique<TemplatedTurns>();
      t->renderer = std::make_unique<ChatRenderer>(dir, c.chat_template, c.vars);
      t->overflow = co.overflow;
      s->templated = std::move(t);
      // A template that does not render is refused before the first turn.
      s->lay_out(ojson::array({{{"role", "user"}, {"content", "check"}}}), nullptr);
    }
    s->identity = chat_identity(dir, cfg.max_seq, profile_name);
    return std::make_unique<Chat>(std::move(s));
  });
}

GenerateOptions Chat::Impl::generate_options(const GenerateParams& params) const {
  if (!params.dump_logits.empty()) invalid_argument("dump_logits: a Chat writes no logits dump (Session::generate does)");
  if (params.special) invalid_argument("special: a Chat keeps its replies as text without control tokens (Session::generate streams them)");
  return api::generate_options(params, *model->checkpoint, &tokenizer());
}

template <class Run>
TurnResult Chat::Impl::turn(const GenerateParams& params, const TokenCallback& on_token, Run&& run) {
  GenerateOptions g = generate_options(params);
  TurnResult out;
  TokenStream text(&tokenizer(), g, out.result, on_token);
  const double encode_before = engine->tap->vision_seconds();
  TurnStats s;
  try {
    s = run(g, text.callback());
  } catch (const StoppedByCaller& stopped) {
    // Given up during the prompt: the conversation rewound its cache and kept no turn.
    s.result = stopped_in_prompt(stopped);
    s.context_tokens = static_cast<std::int64_t>(conversation->tokens().size());
  }
  text.finish();
  if (recorder) {
    recorder->finish();
    out.result.recorded_calls = static_cast<std::int64_t>(recorder->calls().size());
    out.result.recorded_bytes = static_cast<std::int64_t>(recorder->bytes_written());
  }
  set_result(out.result, s.result, engine->tap->vision_seconds() - encode_before);
  out.prefilled_tokens = s.prefilled_tokens;
  out.reused_tokens = s.reused_tokens;
  out.dropped_turns = s.dropped_turns;
  out.context_tokens = s.context_tokens;
  return out;
}

TemplatedTurns::Layout Chat::Impl::lay_out(const ojson& messages, const RgbImage* image) const {
  ChatMessages c;
  if (const std::string& system = conversation->system(); !system.empty()) {
    c.messages.push_back({{"role", "system"}, {"content", system}});
  }
  for (const ojson& m : messages) c.messages.push_back(m);
  TemplatedTurns::Layout out;
  out.text = templated->renderer->render(c, "chat").text;
  if (image == nullptr) {
    const std::vector<int> ids = tokenizer().encode(out.text);
    out.ids.assign(ids.begin(), ids.end());
    return out;
  }
  if (const std::optional<int> n = templated->soft_tokens) {
    out.batch = builder->process_text(out.text, std::span(&*n, 1));
  } else {
    out.batch = builder->process(out.text, std::span(image, 1));
    out.pixels = true;
  }
  const auto ids = out.batch->input_ids.as<std::int64_t>();
  out.ids.assign(ids.begin(), ids.end());
  return out;
}

TurnStats Chat::Impl::templated_turn(const ojson& user, std::optional<RgbImage> image, const GenerateOptions& g,
                                     const staticlm::TokenCallback& stream) {
  TemplatedTurns& t = *templated;
  ojson messages = t.messages;
  messages.push_back(user);
  // The first turn's image, given now or kept from then.
  const RgbImage* shown = image ? &*image : (t.image ? &*t.image : nullptr);
  const std::int64_t cap = engine->runtime->max_seq() - 1, reserve = conversation->reply_reserve(g);
  TemplatedTurns::Layout laid = lay_out(messages, shown);
  std::int64_t dropped = 0;
  while (static_cast<std::int64_t>(laid.ids.size()) + reserve > cap) {
    const std::string need = "the conversation lays out to " + n_tokens(static_cast<std::int64_t>(laid.ids.size())) +
                             " plus " + n_tokens(reserve) + " for the reply, but max_seq " + std::to_string(cap + 1) +
                             " holds " + n_tokens(cap);
    if (t.overflow == OverflowPolicy::kError) {
      out_of_range("chat: " + need + " (context_overflow=error; /reset, or set context_overflow=truncate)");
    }
    // The oldest turn: its user message and everything up to the next one.
    std::size_t next = 1;
    while (next < messages.size() && messages[next].value("role", "") != "user") ++next;
    if (next >= messages.size()) {
      out_of_range("chat: " + need + " (no earlier turn to drop: a shorter turn, a smaller -n or a larger max_seq)");
    }
    messages.erase(messages.begin(), messages.begin() + static_cast<std::ptrdiff_t>(next));
    shown = nullptr;  // only the first turn carries one
    ++dropped;
    laid = lay_out(messages, nullptr);
  }
  // The static input only where the prefill runs the vision graph: a cache without the image's
  // whole span (the first turn, a load, a layout that moved it).
  std::optional<StaticInputs> in;
  std::optional<PrefillInput> prefill;
  const std::int64_t span_end = builder ? builder->options().profile.visual_end_idx() : 0;
  if (laid.batch && conversation->reusable(laid.ids) < span_end) {
    if (!laid.pixels) laid.batch = builder->process(laid.text, std::span(shown, 1));
    t.soft_tokens = static_cast<int>(laid.batch->num_soft_tokens_per_image.at(0));
    in = build_static_inputs(*laid.batch, builder->options());
    prefill = prefill_input(*in);
  }
  TurnStats s = conversation->say_context(std::move(laid.ids), prefill ? &*prefill : nullptr, span_end, g, stream);
  s.dropped_turns = dropped;
  // The reply as the next layout renders it: its text, special tokens (a thought channel, a
  // tool call) spelled out, without the end token that closed it.
  std::vector<int> reply(s.result.tokens.begin(), s.result.tokens.end());
  if (!reply.empty() && g.is_eos(reply.back())) reply.pop_back();
  messages.push_back({{"role", "assistant"}, {"content", tokenizer().decode(reply)}});
  t.messages = std::move(messages);
  if (shown == nullptr) {
    t.image.reset();
    t.soft_tokens.reset();
  } else if (image) {
    t.image = std::move(image);
  }
  return s;
}

TurnResult Chat::say(const std::string& text, const GenerateParams& params, const TokenCallback& on_token) {
  return guarded([&] {
    const auto call = one_call(*impl_);
    return impl_->turn(params, on_token, [&](const GenerateOptions& g, const staticlm::TokenCallback& stream) {
      if (impl_->templated) return impl_->templated_turn({{"role", "user"}, {"content", text}}, std::nullopt, g, stream);
      return impl_->conversation->say(text, g, stream);
    });
  });
}

TurnResult Chat::say_with_image(const std::string& text, const std::string& image, const GenerateParams& params,
                                const TokenCallback& on_token) {
  return guarded([&] {
    const auto call = one_call(*impl_);
    Impl& s = *impl_;
    if (!s.builder) invalid_argument("chat: an image needs the vision graphs: make the chat with ChatOptions::vision");
    if (!s.conversation->empty()) {
      invalid_argument("chat: an image can only come with the first turn (the static profile fixes the image span's "
                       "positions); reset first");
    }
    RgbImage decoded = decode_image_file(image);
    if (s.templated) {
      // The image part names its file (absolute: a saved chat reads it again at load).
      const std::string source = std::filesystem::absolute(image).lexically_normal().string();
      const ojson user = {{"role", "user"},
                          {"content", ojson::array({{{"type", "image"}, {"image", source}}, {{"type", "text"}, {"text", text}}})}};
      return s.turn(params, on_token, [&](const GenerateOptions& g, const staticlm::TokenCallback& stream) {
        return s.templated_turn(user, std::move(decoded), g, stream);
      });
    }
    // The static layout of the whole first turn (prefix + turn), image span included.
    const TurnText t = render_turn(s.conversation->system(), text, /*first=*/true, /*image=*/true);
    const StaticInputs in = s.builder->build(t.prefix + t.turn, std::span(&decoded, 1));
    return s.turn(params, on_token, [&](const GenerateOptions& g, const staticlm::TokenCallback& stream) {
      return s.conversation->say_first_with_image(prefill_input(in), in.raw_input_ids.as<std::int64_t>(), g, stream);
    });
  });
}

void Chat::check(const GenerateParams& params) const {
  guarded([&] { impl_->generate_options(params); });
}

void Chat::check_image(const std::string& image) const {
  guarded([&] { decode_image_file(image); });
}

void Chat::reset() {
  guarded([&] {
    const auto call = one_call(*impl_);
    impl_->conversation->reset();
    if (impl_->templated) {
      impl_->templated->messages = ojson::array();
      impl_->templated->image.reset();
      impl_->templated->soft_tokens.reset();
    }
  });
}

void Chat::save(const std::string& path) const {
  guarded([&] {
    const auto call = one_call(*impl_);
    Conversation::Metadata extra;
    // The messages name the image's file, which load() reads again.
    if (const TemplatedTurns* t = impl_->templated.get()) extra[kMessagesKey] = t->messages.dump();
    impl_->conversation->save(path, impl_->identity, extra);
  });
}

void Chat::load(const std::string& path) {
  guarded([&] {
    const auto call = one_call(*impl_);
    TemplatedTurns* t = impl_->templated.get();
    ojson messages;
    std::optional<RgbImage> image;
    impl_->conversation->load(path, impl_->identity, [&](const Conversation::Metadata& md) {
      const auto it = md.find(kMessagesKey);
      if (!t && it != md.end()) {
        invalid_argument(path + ": saved by a chat with a chat template (--jinja / --chat-template); this chat uses "
                         "the built-in format");
      }
      if (!t) return;
      if (it == md.end()) {
        invalid_argument(path + ": saved by a chat in the built-in format; this chat uses a chat template (start it "
                         "without --jinja / --chat-template)");
      }
      messages = ojson::parse(it->second, nullptr, /*allow_exceptions=*/false);
      const auto is_message = [](const ojson& m) {
        return m.is_object() && m.contains("role") && m["role"].is_string() && m.contains("content");
      };
      if (!messages.is_array() || !std::all_of(messages.begin(), messages.end(), is_message)) {
        invalid_file(path + ": metadata messages is not a JSON array of {role, content} messages");
      }
      // The first turn's image, read again from the file its part names: later layouts expand it.
      if (const std::vector<std::string> images = conversation_images(messages); !images.empty()) {
        if (!impl_->builder) invalid_argument(path + ": the saved chat holds an image; this chat has no vision graphs");
        if (images[0].empty()) invalid_file(path + ": the saved image part names no file");
        try {
          image = decode_image_file(images[0]);
        } catch (const staticlm::Error& e) {
          invalid_argument(path + ": the saved chat's image: " + e.what());
        }
      }
    });
    if (t) {
      t->messages = std::move(messages);
      t->image = std::move(image);
      t->soft_tokens.reset();
    }
  });
}

std::int64_t Chat::turns() const { return impl_->turns; }
std::int64_t Chat::context_tokens() const { return impl_->context_tokens; }
bool Chat::empty() const { return impl_->empty; }
std::int64_t Chat::past_len() const { return impl_->past_len; }
std::int64_t Chat::max_seq() const { return impl_->engine->runtime->max_seq(); }
bool Chat::vision() const { return impl_->builder != nullptr; }
const std::string& Chat::identity() const { return impl_->identity; }

std::string Chat::backend_placement() const {
  return staticlm::backend_placement(*impl_->engine->backend, /*with_calls=*/false);
}

}  // namespace staticlm::api
