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
#include "staticlm/inputs.h"
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

// A thin adapter over the library (api::check_static_inputs and save_static_inputs, include/staticlm/inputs.h): the
// prompt flags resolved to text, the summary printed.
void run(const InputsArgs& a) {
  if (a.prompt && a.messages) invalid_argument("give --prompt or --messages, not both");
  std::vector<std::string> sets = a.sets;
  // --max-seq wins over the config file and --set (--profile went in before --set).
  if (a.max_seq) sets.push_back("max_seq=" + std::to_string(*a.max_seq));
  std::vector<std::string> image_paths;
  const std::string prompt =
      resolve_prompt(PromptSource{a.prompt, a.messages, a.chat, a.images, a.model, {}, {}, {}, {}}, load_runtime_config(a.config, sets),
                     image_paths);
  // Before the slow checkpoint load: the images' files and the output's place.
  for (const std::string& image : image_paths) check_image_file(image);
  check_output_file(a.out);
  api::InputOptions o;
  o.config_file = a.config.value_or("");
  o.sets = sets;
  o.reserve_decode_slot = a.reserve_decode_slot;
  const api::StaticInputsReport r = api::check_static_inputs(a.model, prompt, image_paths, o);
  if (a.json) {
    auto j = nlohmann::ordered_json::parse(r.summary_json);
    j["out"] = a.out;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << r.summary_text;
  }
  if (!r.all_passed) {
    std::string failed;
    for (const api::StaticInputCheck& c : r.checks) {
      if (!c.passed) failed += (failed.empty() ? "" : "; ") + c.name + ": " + c.detail;
    }
    internal_error("side-by-side check of the static inputs failed: " + failed);
  }
  api::save_static_inputs(r, a.out);
}

}  // namespace

void add_inputs_command(CLI::App& app) {
  auto a = std::make_shared<InputsArgs>();
  auto* cmd = app.add_subcommand("inputs", "build the fixed-shape static inputs of one prompt (and image), check and write them");
  cmd->add_option("-m,--model", a->model, "checkpoint directory (config.json, tokenizer.json)")->required();
  cmd->add_option("--config", a->config, "runtime config YAML (TICO's static_gemma4_runtime.yaml keys)");
  cmd->add_option("--set", a->sets, "override a config key: KEY=VALUE (value parsed as YAML); repeatable");
  cmd->add_option("--max-seq", a->max_seq, "static sequence length S")->check(max_seq_range());
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
