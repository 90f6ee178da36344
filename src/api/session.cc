// Session: the orchestration `staticlm run` used to hold. It owns the thread pool and, made on
// first use, one engine per prompt kind (text: the text profile; image: the runtime config's
// vision profile, whose static layout the StaticInputBuilder makes), so a text prompt runs
// exactly as it would on a session that never saw an image.
#include "staticlm/session.h"

#include "api/engine.h"
#include "api/generate_params.h"
#include "api/guarded.h"
#include "api/one_call.h"
#include "api/model_impl.h"
#include "api/thread_count.h"
#include "api/token_stream.h"
#include "backends/backend_factory.h"
#include "base/error.h"
#include "runtime/logits_dump.h"
#include "runtime/static_input_builder.h"
#include "staticlm/model.h"
#include "vision/image_decode.h"

namespace staticlm::api {

struct Session::Impl {
  std::shared_ptr<const Model::Impl> model;
  SessionOptions options;
  RuntimeConfig config;  // max_seq resolved
  std::vector<std::int64_t> prefill_buckets;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<inspect::Recorder> recorder;  // with record_dir; before the engines that feed it
  std::unique_ptr<StaticInputBuilder> image_builder;
  std::unique_ptr<Engine> text, image;
  Engine* last = nullptr;  // the engine of the last prefill (decode continues there)
  std::atomic<bool> busy{false};  // a call runs (one_call.h)
  // past_len() as the last call left it (read from any thread while a call runs; set by publish).
  std::atomic<std::int64_t> past_len{0};
  void publish() noexcept { past_len = last ? last->runtime->past_len() : 0; }

  const Checkpoint& checkpoint() const { return *model->checkpoint; }

  Engine& engine(bool with_image);
  std::vector<std::int64_t> prompt_ids(const Prompt& p) const;
  StaticInputs image_inputs(const Prompt& p);
  // Prefills `p` on its engine; returns the logits. Used by prefill(); generate() runs the loop.
  std::span<const float> prefill(const Prompt& p);
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

std::unique_ptr<Session> Model::session(const SessionOptions& o) const {
  return guarded([&] {
    auto s = std::make_unique<Session::Impl>();
    s->model = impl_;
    s->options = o;
    s->config = session_config(impl_->info, o);
    if (s->config.prefill_buckets) s->prefill_buckets = append_buckets_for(s->config, s->config.max_seq);
    s->pool = std::make_unique<ThreadPool>(thread_count(o.threads));
    return std::make_unique<Session>(std::move(s));
  });
}

Engine& Session::Impl::engine(bool with_image) {
  std::unique_ptr<Engine>& slot = with_image ? image : text;
  if (slot) return *slot;
  SubgraphProfile profile;
  if (with_image) set_vision_profile(profile, image_builder->options().profile);
  profile.max_seq = config.max_seq;
  profile.rope_sine = config.rope_sine;
  profile.append_lengths = prefill_buckets;
  slot = make_engine(*model, options, config, profile, *pool, recorder);
  return *slot;
}

std::vector<std::int64_t> Session::Impl::prompt_ids(const Prompt& p) const {
  std::vector<std::int64_t> ids;
  if (!p.ids.empty()) {
    for (const std::int64_t id : p.ids) {
      if (id < 0 || id >= model->info.vocab_size) {
        invalid_argument("prompt token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                         std::to_string(model->info.vocab_size) + ")");
      }
    }
    ids = p.ids;
  } else {
    if (!model->tokenizer) {
      invalid_argument("a text prompt needs the checkpoint's tokenizer.json, which " + model->info.dir +
                       " does not have; give token ids instead");
    }
    staticlm::Tokenizer::TokenCount count;
    const auto enc = model->tokenizer->tokenizer->encode_at_most(
        p.text, static_cast<std::size_t>(std::max<std::int64_t>(config.max_seq - 1, 0)), false, &count);
    if (!enc) {
      invalid_argument("the prompt has " + std::string(count.exact ? "" : "at least ") + std::to_string(count.tokens) +
                       " tokens but max_seq " +
                       std::to_string(config.max_seq) + " leaves room for " + std::to_string(config.max_seq - 1) +
                       " (one slot is kept for decoding)");
    }
    ids.assign(enc->begin(), enc->end());
    if (ids.empty()) invalid_argument("the prompt is empty");
  }
  if (static_cast<std::int64_t>(ids.size()) > config.max_seq - 1) {
    invalid_argument("the prompt has " + std::to_string(ids.size()) + " tokens but max_seq " +
                     std::to_string(config.max_seq) + " leaves room for " + std::to_string(config.max_seq - 1) +
                     " (one slot is kept for decoding)");
  }
  return ids;
}

StaticInputs Session::Impl::image_inputs(const Prompt& p) {
  if (!p.ids.empty()) invalid_argument("an image prompt is text with the <|image|> placeholder, not token ids");
  if (p.images.size() > 1) {
    invalid_argument(std::to_string(p.images.size()) +
                     " images given, but the static profile holds one image span: give one image");
  }
  if (!image_builder) {
    auto b = StaticInputBuilder::create(model->info.dir, config, /*reserve_decode_slot=*/true);
    if (!b->has_vision()) invalid_argument("an image needs a model with a vision tower; " + model->info.dir + " is text-only");
    image_builder = std::move(b);
  }
  std::vector<RgbImage> images;
  for (const std::string& path : p.images) images.push_back(decode_image_file(path));
  StaticInputs in = image_builder->build(p.text, images);
  if (!in.has_image()) internal_error("the static inputs hold no image");
  return in;
}

namespace {

void check_one_source(const Prompt& p) {
  if (p.ids.empty() == p.text.empty()) invalid_argument("a prompt is token ids or text: give exactly one");
}

// A call on the session, one at a time; past_len is published when it ends.
auto one_call(Session::Impl& impl) {
  return OneCallThen(impl.busy, "this session", [&impl]() noexcept { impl.publish(); });
}

}  // namespace

std::span<const float> Session::Impl::prefill(const Prompt& p) {
  check_one_source(p);
  if (!p.images.empty()) {
    const StaticInputs in = image_inputs(p);
    last = &engine(true);
    return last->runtime->prefill(prefill_input(in));
  }
  const std::vector<std::int64_t> ids = prompt_ids(p);
  last = &engine(false);
  return prefill_buckets.empty() ? last->runtime->prefill_tokens(ids) : last->runtime->prefill_bucketed(ids);
}

std::vector<float> Session::prefill(const Prompt& prompt) {
  return guarded([&] {
    const auto call = one_call(*impl_);
    const std::span<const float> logits = impl_->prefill(prompt);
    return std::vector<float>(logits.begin(), logits.end());
  });
}

std::vector<float> Session::decode(std::int64_t token) {
  return guarded([&] {
    const auto call = one_call(*impl_);
    if (!impl_->last) invalid_argument("decode before prefill: the session holds no prompt");
    if (token < 0 || token >= impl_->model->info.vocab_size) {
      invalid_argument("token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                       std::to_string(impl_->model->info.vocab_size) + ")");
    }
    if (impl_->last->runtime->remaining_capacity() < 1) {
      out_of_range("the KV cache is full (max_seq " + std::to_string(impl_->config.max_seq) + ")");
    }
    const std::span<const float> logits = impl_->last->runtime->decode(token);
    return std::vector<float>(logits.begin(), logits.end());
  });
}

std::int64_t Session::max_seq() const { return impl_->config.max_seq; }
std::int64_t Session::past_len() const { return impl_->past_len; }

std::string Session::backend_placement() const {
  return impl_->last ? staticlm::backend_placement(*impl_->last->backend) : std::string();
}

GenerationResult Session::generate(const Prompt& prompt, const GenerateParams& params, const TokenCallback& on_token) {
  return guarded([&] {
    const auto call = one_call(*impl_);
    Impl& s = *impl_;
    check_one_source(prompt);
    const staticlm::Tokenizer* tok = s.model->tokenizer ? s.model->tokenizer->tokenizer.get() : nullptr;
    GenerateOptions g = generate_options(params, s.checkpoint(), tok);
    if (!g.stop_strings.empty() && !tok) {
      invalid_argument("stop strings need the checkpoint's tokenizer.json, which " + s.model->info.dir + " does not have");
    }
    // Everything that can refuse the prompt runs before the engine is made.
    std::optional<StaticInputs> image;
    std::vector<std::int64_t> ids;
    if (!prompt.images.empty()) {
      image = s.image_inputs(prompt);
    } else {
      ids = s.prompt_ids(prompt);
    }
    Engine& e = s.engine(image.has_value());
    s.last = &e;

    GenerationResult out;
    TokenStream text(tok, g, out, on_token, params.special);
    const staticlm::TokenCallback& stream = text.callback();
    const double encode_before = e.tap->vision_seconds();
    staticlm::GenerationResult r;
    try {
      if (image) {
        r = e.runtime->generate(prefill_input(*image), g, stream);
      } else if (!s.prefill_buckets.empty()) {
        // Starts over (an append would follow the previous call's context), then the smallest
        // prefill bucket that holds the prompt.
        e.runtime->rewind(0);
        r = e.runtime->generate_append(ids, ids, g, stream);
      } else {
        r = e.runtime->generate_tokens(ids, g, stream);
      }
    } catch (const StoppedByCaller& stopped) {
      e.runtime->rewind(0);  // a prompt given up part-way: nothing of it counts as cached
      r = stopped_in_prompt(stopped);
    }
    text.finish();
    if (s.recorder) {
      s.recorder->finish();
      out.recorded_calls = static_cast<std::int64_t>(s.recorder->calls().size());
      out.recorded_bytes = static_cast<std::int64_t>(s.recorder->bytes_written());
    }
    if (!params.dump_logits.empty() && !r.tokens.empty()) {  // a prompt given up leaves nothing to dump
      write_logits_dump(params.dump_logits, LogitsDump{r.prefill_logits, r.decode_logits, r.tokens,
                                                       image ? e.tap->vision_embeds() : std::vector<float>{},
                                                       image ? e.tap->vision_rows() : 0});
    }
    set_result(out, r, e.tap->vision_seconds() - encode_before);
    return out;
  });
}

}  // namespace staticlm::api
