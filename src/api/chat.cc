// Chat: the orchestration `staticlm chat` used to hold, over runtime/conversation.h. One engine
// for the whole chat (the vision profile with ChatOptions::vision, else the text profile), since
// the cache it carries from turn to turn belongs to one runtime.
#include "staticlm/chat.h"

#include <filesystem>

#include "api/engine.h"
#include "api/generate_params.h"
#include "api/guarded.h"
#include "api/model_impl.h"
#include "api/thread_count.h"
#include "api/token_stream.h"
#include "backends/backend_factory.h"
#include "base/error.h"
#include "base/file.h"
#include "base/sha256.h"
#include "runtime/conversation.h"
#include "staticlm/model.h"
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

}  // namespace

// Members are destroyed in reverse order: the conversation before the engine whose runtime it
// borrows, the engine before the pool and the recorder it uses.
struct Chat::Impl {
  std::shared_ptr<const Model::Impl> model;
  SessionOptions options;
  RuntimeConfig config;  // max_seq resolved
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<inspect::Recorder> recorder;  // with record_dir
  std::unique_ptr<StaticInputBuilder> builder;  // with vision
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Conversation> conversation;
  std::string identity;

  const staticlm::Tokenizer& tokenizer() const { return *model->tokenizer->tokenizer; }
  GenerateOptions generate_options(const GenerateParams& params) const;

  // One turn: `run(options, stream)` adds it to the conversation; the rest is the API's result.
  template <class Run>
  TurnResult turn(const GenerateParams& params, const TokenCallback& on_token, Run&& run);
};

Chat::Chat(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
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
    s->identity = chat_identity(dir, cfg.max_seq, profile_name);
    return std::make_unique<Chat>(std::move(s));
  });
}

GenerateOptions Chat::Impl::generate_options(const GenerateParams& params) const {
  if (!params.dump_logits.empty()) invalid_argument("dump_logits: a Chat writes no logits dump (Session::generate does)");
  return api::generate_options(params, *model->checkpoint, &tokenizer());
}

template <class Run>
TurnResult Chat::Impl::turn(const GenerateParams& params, const TokenCallback& on_token, Run&& run) {
  GenerateOptions g = generate_options(params);
  TurnResult out;
  TokenStream text(&tokenizer(), g, out.result, on_token);
  const double encode_before = engine->tap->vision_seconds();
  const TurnStats s = run(g, text.callback());
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

TurnResult Chat::say(const std::string& text, const GenerateParams& params, const TokenCallback& on_token) {
  return guarded([&] {
    return impl_->turn(params, on_token, [&](const GenerateOptions& g, const staticlm::TokenCallback& stream) {
      return impl_->conversation->say(text, g, stream);
    });
  });
}

TurnResult Chat::say_with_image(const std::string& text, const std::string& image, const GenerateParams& params,
                                const TokenCallback& on_token) {
  return guarded([&] {
    Impl& s = *impl_;
    if (!s.builder) invalid_argument("chat: an image needs the vision graphs: make the chat with ChatOptions::vision");
    if (!s.conversation->empty()) {
      invalid_argument("chat: an image can only come with the first turn (the static profile fixes the image span's "
                       "positions); reset first");
    }
    // The static layout of the whole first turn (prefix + turn), image span included.
    const TurnText t = render_turn(s.conversation->system(), text, /*first=*/true, /*image=*/true);
    const RgbImage decoded = decode_image_file(image);
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
  guarded([&] { impl_->conversation->reset(); });
}

void Chat::save(const std::string& path) const {
  guarded([&] { impl_->conversation->save(path, impl_->identity); });
}

void Chat::load(const std::string& path) {
  guarded([&] { impl_->conversation->load(path, impl_->identity); });
}

std::int64_t Chat::turns() const { return impl_->conversation->turns(); }
std::int64_t Chat::context_tokens() const { return static_cast<std::int64_t>(impl_->conversation->tokens().size()); }
bool Chat::empty() const { return impl_->conversation->empty(); }
std::int64_t Chat::past_len() const { return impl_->engine->runtime->past_len(); }
std::int64_t Chat::max_seq() const { return impl_->engine->runtime->max_seq(); }
bool Chat::vision() const { return impl_->builder != nullptr; }
const std::string& Chat::identity() const { return impl_->identity; }

std::string Chat::backend_placement() const {
  return staticlm::backend_placement(*impl_->engine->backend, /*with_calls=*/false);
}

}  // namespace staticlm::api
