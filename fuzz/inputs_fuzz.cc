// The `inputs` builder on fuzzed prompts: the tiny model (made once, in a temporary directory)
// lays each prompt out as text, and with an image for a small inline profile; a prompt may hold any number of <|image|>
// markers and special tokens, with or without the one image.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include "fuzz_util.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"

namespace {
struct Fixture {
  std::string dir;
  std::unique_ptr<staticlm::StaticInputBuilder> text, image;
  staticlm::RgbImage picture;
};

// Made once and never destroyed (a fuzzer exits from anywhere).
const Fixture& fixture() {
  static const Fixture& f = *[] {
    auto* p = new Fixture;
    Fixture& x = *p;
    x.dir = staticlm::fuzz::tiny_model();
    const staticlm::RuntimeConfig text_cfg = staticlm::parse_runtime_config("max_seq: 64\n", "fuzz");
    x.text = staticlm::StaticInputBuilder::create(x.dir, text_cfg, true, true);
    // A small inline profile (12 x 18 patches, 24 soft tokens at [3, 27)): the picture is
    // processed on every image prompt, so it must be cheap.
    const staticlm::RuntimeConfig image_cfg = staticlm::parse_runtime_config(
        "max_seq: 64\nimage_fit: fit\nvision_profile: {name: fuzz, visual_start_idx: 3, num_visual_tokens: 24, "
        "max_soft_tokens: 280, patch_grid_height: 12, patch_grid_width: 18}\n",
        "fuzz");
    x.image = staticlm::StaticInputBuilder::create(x.dir, image_cfg, true);
    x.picture = staticlm::RgbImage(40, 30);
    x.picture.pixels.assign(x.picture.pixels.size(), 128);
    return p;
  }();
  return f;
}
}  // namespace

// The fixture (a model written to disk, two tokenizer loads) is made before fuzzing starts, so
// its seconds never count against the per-input -timeout.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fixture();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const Fixture& f = fixture();
  const std::string prompt = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] { f.text->build(prompt, {}); });
  // The image path (slow: the picture is processed each time) only for prompts that name it.
  if (prompt.find("<|image|>") != std::string::npos) {
    fuzz::refuse_or_accept([&] { f.image->build(prompt, std::span(&f.picture, 1)); });
  }
  return 0;
}
