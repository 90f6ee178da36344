// `staticlm serve` request bodies (OpenAI chat and text completions, llama.cpp's /completion):
// JSON, messages with text and image parts (base64 data: URLs decoded and laid out in a small
// inline vision profile), tools, sampling fields, rendered with the tiny model's chat template and
// tokenized. A bad body may only be refused as a RequestError (HTTP 400 naming the field); any
// other exception is a finding. A chat request is parsed twice, with the template parsed once
// (serve's ChatRenderer) and found per request (render_chat): a different prompt or refusal is
// a finding too.
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "fuzz_util.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "serve/serve_engine.h"
#include "text/tokenizer.h"

namespace {
struct Fixture {
  std::unique_ptr<staticlm::Tokenizer> tokenizer;
  std::unique_ptr<staticlm::StaticInputBuilder> builder;
  staticlm::RequestContext context;
  staticlm::RequestContext templated;  // the same, with the template parsed once
};

const Fixture& fixture() {
  static const Fixture& f = *[] {
    auto* x = new Fixture;
    const std::string dir = staticlm::fuzz::tiny_model();
    x->tokenizer = staticlm::Tokenizer::load(dir + "/tokenizer.json");
    // The chat format puts the image at 5 (<bos><|turn>user\n<|image>); 24 soft tokens.
    const staticlm::RuntimeConfig cfg = staticlm::parse_runtime_config(
        "max_seq: 96\nimage_fit: fit\nvision_profile: {name: fuzz, visual_start_idx: 5, num_visual_tokens: 24, "
        "max_soft_tokens: 280, patch_grid_height: 12, patch_grid_width: 18}\n",
        "fuzz");
    x->builder = staticlm::StaticInputBuilder::create(dir, cfg, /*reserve_decode_slot=*/true);
    x->context.model_dir = dir;
    x->context.tokenizer = x->tokenizer.get();
    x->context.max_seq = cfg.max_seq;
    x->context.images.builder = x->builder.get();
    x->templated = x->context;
    x->templated.renderer = std::make_shared<const staticlm::ChatRenderer>(dir, "", std::vector<std::string>{});
    return x;
  }();
  return f;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Fixture& f = fixture();
  const std::string body = staticlm::fuzz::text(data, size);
  // The same bytes as a chat request, an OpenAI text completion request and llama.cpp's.
  staticlm::ChatJob chat, text, llama, chat_again;
  std::string refused, refused_again;
  try {
    staticlm::parse_chat_request(body, f.context, chat);
  } catch (const staticlm::RequestError& e) {
    refused = e.param + ": " + e.message;
  }
  try {
    staticlm::parse_chat_request(body, f.templated, chat_again);
  } catch (const staticlm::RequestError& e) {
    refused_again = e.param + ": " + e.message;
  }
  if (refused != refused_again || chat.prompt != chat_again.prompt) {
    std::fprintf(stderr, "the parsed-once template disagrees: '%s' / '%s'\n", refused.c_str(), refused_again.c_str());
    std::abort();
  }
  try {
    staticlm::parse_completion_request(body, f.context, text);
  } catch (const staticlm::RequestError&) {
  }
  try {
    staticlm::parse_llama_completion_request(body, f.context, llama);
  } catch (const staticlm::RequestError&) {
  }
  return 0;
}
