// config.json (both layouts: Gemma4ForConditionalGeneration with text_config/vision_config, and
// the text-only one) through the per-layer table, and generation_config.json (after a NUL).
#include "fuzz_util.h"
#include "model/config.h"
#include "model/layer_table.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  const auto parts = fuzz::split(in);
  const std::string_view config = parts.first, generation = parts.second;
  fuzz::refuse_or_accept([&] {
    const ModelConfig c = parse_model_config(std::string(config), "config.json");
    build_layer_table(c.text, "config.json: ");
    parse_model_config(model_config_to_json(c), "round trip");
  });
  fuzz::refuse_or_accept([&] { parse_generation_config(std::string(generation), "generation_config.json"); });
  return 0;
}
