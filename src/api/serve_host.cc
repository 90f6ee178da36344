#include "api/serve_host.h"

#include <filesystem>

#include "api/generate_params.h"
#include "base/error.h"
#include "base/file.h"
#include "runtime/runtime_config.h"
#include "text/chat_render.h"

namespace staticlm::api {

namespace {

void note(const ServeHostOptions& o, const std::string& line) {
  if (o.log) o.log(line);
}

}  // namespace

std::unique_ptr<ServeHost> ServeHost::create(const ServeHostOptions& a) {
  std::vector<std::string> sets = a.sets;
  if (a.max_seq) sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  const RuntimeConfig cfg = load_runtime_config(a.config_file, sets);
  check_backend_choice(a.backend);
  check_generate_params(a.defaults);
  // The chat template, parsed once. A --chat-template that is missing or does not parse is refused
  // now, not at the first request, and before the slow checkpoint load; a checkpoint's own
  // broken template leaves completions served and each chat request answered 400 with the
  // reason.
  if (a.reasoning_format != "none" && a.reasoning_format != "auto" && a.reasoning_format != "deepseek" &&
      a.reasoning_format != "deepseek-legacy") {
    invalid_argument("--reasoning-format " + a.reasoning_format + ": expected none, auto, deepseek or deepseek-legacy");
  }
  if (a.reasoning_budget != -1 && a.reasoning_budget != 0) {
    invalid_argument("--reasoning-budget " + std::to_string(a.reasoning_budget) +
                     ": only -1 (thinking as the template's variables set it) or 0 (thinking off) are supported, as in llama.cpp");
  }
  std::vector<std::string> vars;
  if (a.reasoning_budget == 0) vars.push_back("enable_thinking=false");
  for (std::string& v : template_kwargs_vars(a.chat_template_kwargs)) vars.push_back(std::move(v));
  std::shared_ptr<const ChatRenderer> renderer;
  try {
    renderer = std::make_shared<const ChatRenderer>(a.model, a.chat_template, vars);
  } catch (const staticlm::Error& e) {
    if (!a.chat_template.empty()) throw;
    note(a, std::string("staticlm serve: chat requests will be refused: ") + e.what());
  }
  std::unique_ptr<ServeHost> h(new ServeHost);
  h->checkpoint_ = Checkpoint::open(a.model);
  const Checkpoint& ck = *h->checkpoint_;
  if (cfg.max_seq > ck.config().text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(cfg.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(ck.config().text.max_position_embeddings));
  }
  const std::string tok_path = path_join(a.model, "tokenizer.json");
  if (!file_exists(tok_path)) invalid_argument("serve: " + a.model + " has no tokenizer.json");
  h->tokenizer_ = staticlm::Tokenizer::load(tok_path);
  const GenerateOptions defaults = generate_options(a.defaults, ck, h->tokenizer_.get());
  const std::string name = std::filesystem::path(a.model).lexically_normal().filename().string();
  h->model_name_ = !a.alias.empty() ? a.alias : name.empty() ? a.model : name;

  h->pool_ = std::make_unique<ThreadPool>(a.threads);
  SubgraphProfile profile;
  profile.max_seq = cfg.max_seq;
  profile.rope_sine = cfg.rope_sine;
  profile.append_lengths = append_buckets_for(cfg, cfg.max_seq);
  // Image parts are served when the model has a vision tower and the runtime config's vision
  // profile fits max_seq; otherwise they are refused with the reason, and text is served.
  ImageIntake images;
  images.allow_local_files = a.allow_local_files;
  if (!ck.config().vision) {
    images.refusal = "image parts need a model with a vision tower; " + h->model_name_ + " is text-only";
  } else {
    try {
      h->builder_ = StaticInputBuilder::create(a.model, cfg, /*reserve_decode_slot=*/true);
      set_vision_profile(profile, h->builder_->options().profile);
      images.builder = h->builder_.get();
    } catch (const staticlm::Error& e) {
      images.refusal = std::string("this server does not take images: ") + e.what();
      note(a, std::string("staticlm serve: text only: ") + e.what());
    }
  }
  CpuBackendOptions bo;
  bo.pool = h->pool_.get();
  bo.bf16_activations = !a.f32_activations;
  bo.resident_weights = a.resident_weights;
  h->backend_ = create_backend(a.backend, ck, profile, bo);
  if (const std::string where = backend_placement(*h->backend_, /*with_calls=*/false); !where.empty()) note(a, where);
  h->context_ = RequestContext{a.model, a.chat_template, h->tokenizer_.get(), defaults, cfg.max_seq, images,
                               std::make_shared<DryBreakerCache>(h->tokenizer_.get()), renderer, vars,
                               a.reasoning_format != "none", a.random_seed};
  h->engine_ = std::make_unique<ServeEngine>(*h->backend_, ck, *h->tokenizer_, ServeOptions{a.slots, a.queue, h->pool_.get()});
  return h;
}

}  // namespace staticlm::api
