// staticlm inputs: the fixed-shape inputs of one prompt (TICO's build_static_inputs), checked
// side by side (step 1) and written as safetensors. Other checks call it exactly so:
//   staticlm inputs -m DIR [--config runtime.yaml] [--set k=v]... [--profile NAME] [--max-seq S]
//                   (--prompt P | --messages F) [--image F]... [--chat] --out OUT.safetensors [--json]
// Output tensors: llm_input_ids I64 [1,S], attention_mask U8 [1,S], valid_length I64 [1],
// raw_input_ids I64 [1,T] and, with an image, pixel_values F32 [1,N,768], image_position_ids
// I64 [1,N,2]. --json prints {T, S, span, checks, ...}.
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "commands.h"
#include "profile_option.h"
#include "prompt_source.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "runtime/static_inputs_check.h"
#include "tensor/safetensors.h"
#include "text/chat_format.h"
#include "vision/image_decode.h"

namespace staticlm::cli {

namespace {

struct InputsArgs {
  std::string model;
  std::optional<std::string> config;
  std::vector<std::string> sets;
  std::optional<std::string> profile;
  std::optional<std::int64_t> max_seq;
  std::optional<std::string> prompt;
  std::optional<std::string> messages;
  std::vector<std::string> images;
  bool chat = false;
  bool reserve_decode_slot = false;
  std::string out;
  bool json = false;
};

void write_inputs(const StaticInputs& s, const std::string& profile, const std::string& path) {
  SafetensorsWriter w;
  w.add("llm_input_ids", s.llm_input_ids.view());
  // The mask is stored as U8 0/1 (the same bytes as the BOOL tensor).
  TensorView mask = s.attention_mask.view();
  mask.dtype = DType::kU8;
  w.add("attention_mask", mask);
  w.add("valid_length", s.valid_length.view());
  w.add("raw_input_ids", s.raw_input_ids.view());
  if (s.pixel_values) w.add("pixel_values", s.pixel_values->view());
  if (s.image_position_ids) w.add("image_position_ids", s.image_position_ids->view());
  w.add_metadata("format", "staticlm-static-inputs");
  w.add_metadata("vision_profile", profile);
  w.add_metadata("max_seq", std::to_string(s.max_seq()));
  w.write(path);
}

nlohmann::ordered_json summary(const StaticInputBuilder& b, const StaticInputs& s, const std::vector<InputCheck>& checks,
                               const InputsArgs& a, const RuntimeConfig& cfg) {
  const StaticInputOptions& o = b.options();
  nlohmann::ordered_json j;
  j["model_dir"] = a.model;
  j["T"] = s.length();
  j["S"] = s.max_seq();
  j["valid_length"] = s.length();
  j["pad_token_id"] = *o.pad_token_id;
  j["image_token_id"] = o.image_token_id ? nlohmann::ordered_json(*o.image_token_id) : nlohmann::ordered_json(nullptr);
  j["vision_profile"] = b.has_vision() ? nlohmann::ordered_json(o.profile.name) : nlohmann::ordered_json(nullptr);
  j["image_fit"] = image_fit_name(cfg.image_fit);
  if (s.has_image()) {
    j["span"] = {o.profile.visual_start_idx, o.profile.visual_end_idx()};
    j["num_visual_tokens"] = o.profile.num_visual_tokens;
    j["patch_grid"] = {o.profile.patch_grid_height, o.profile.patch_grid_width};
    j["pixel_values_shape"] = s.pixel_values->shape().dims();
    j["image_position_ids_sha256"] = o.profile.position_ids_sha256();
  } else {
    j["span"] = nullptr;
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const InputCheck& c : checks) list.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  j["checks"] = std::move(list);
  j["all_passed"] = all_passed(checks);
  j["raw_input_ids_head"] = std::vector<std::int64_t>(
      s.raw_input_ids.as<std::int64_t>().begin(),
      s.raw_input_ids.as<std::int64_t>().begin() + std::min<std::int64_t>(s.length(), 8));
  j["out"] = a.out;
  return j;
}

void run(const InputsArgs& a) {
  if (a.prompt && a.messages) invalid_argument("give --prompt or --messages, not both");
  std::vector<std::string> sets = a.sets;
  // --max-seq wins over the config file and --set (--profile went in before --set).
  if (a.max_seq) sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  const RuntimeConfig cfg = load_runtime_config(a.config, sets);
  std::vector<std::string> image_paths;
  const std::string prompt = resolve_prompt(PromptSource{a.prompt, a.messages, a.chat, a.images, a.model}, cfg, image_paths);
  // A text-only prompt is not checked against the image span (a multimodal checkpoint's
  // profile need not fit max_seq then).
  const auto builder = StaticInputBuilder::create(a.model, cfg, a.reserve_decode_slot, /*text_only=*/image_paths.empty());
  std::vector<RgbImage> images;
  for (const std::string& path : image_paths) images.push_back(decode_image_file(path));

  const StaticInputs inputs = builder->build(prompt, images);
  // Step 1: re-run the processor and re-derive every output independently.
  const ProcessorBatch reference = builder->process(prompt, images);
  const StaticInputOptions& o = builder->options();
  const std::vector<InputCheck> checks =
      check_static_inputs(inputs, reference, inputs.max_seq(), *o.pad_token_id, o.image_token_id);
  const auto j = summary(*builder, inputs, checks, a, cfg);
  if (a.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "T " << inputs.length() << " of S " << inputs.max_seq();
    if (inputs.has_image()) {
      std::cout << ", image span [" << o.profile.visual_start_idx << ", " << o.profile.visual_end_idx() << ") of profile "
                << o.profile.name;
    }
    std::cout << "\n";
    for (const InputCheck& c : checks) std::cout << (c.passed ? "  ok    " : "  FAIL  ") << c.name << ": " << c.detail << "\n";
  }
  if (!all_passed(checks)) {
    std::string failed;
    for (const InputCheck& c : checks) {
      if (!c.passed) failed += (failed.empty() ? "" : "; ") + c.name + ": " + c.detail;
    }
    internal_error("side-by-side check of the static inputs failed: " + failed);
  }
  write_inputs(inputs, builder->has_vision() ? o.profile.name : "", a.out);
}

}  // namespace

void add_inputs_command(CLI::App& app) {
  auto a = std::make_shared<InputsArgs>();
  auto* cmd = app.add_subcommand("inputs", "build the fixed-shape static inputs of one prompt (and image), check and write them");
  cmd->add_option("-m,--model", a->model, "checkpoint directory (config.json, tokenizer.json)")->required();
  cmd->add_option("--config", a->config, "runtime config YAML (TICO's static_gemma4_runtime.yaml keys)");
  cmd->add_option("--set", a->sets, "override a config key: KEY=VALUE (value parsed as YAML); repeatable");
  cmd->add_option("--max-seq", a->max_seq, "static sequence length S");
  cmd->add_option("--prompt", a->prompt, "prompt text, used as given (\"<|image|>\" marks the image)");
  cmd->add_option("--messages", a->messages, "JSON file of chat messages (rendered with the chat format)");
  cmd->add_option("--image", a->images, "image file (JPEG or PNG); at most one for a static profile");
  cmd->add_flag("--chat", a->chat, "wrap the prompt in the chat format (a user turn and the generation prompt)");
  cmd->add_flag("--reserve-decode-slot", a->reserve_decode_slot, "refuse prompts longer than max_seq - 1 tokens");
  cmd->add_option("--out", a->out, "output .safetensors file")->required();
  cmd->add_flag("--json", a->json, "print a JSON summary (T, S, span, checks)");
  add_profile_option(*cmd, a->profile);
  cmd->callback([a] {
    a->sets = with_profile(a->sets, a->profile);
    run(*a);
  });
}

}  // namespace staticlm::cli
