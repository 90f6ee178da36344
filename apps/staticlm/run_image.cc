#include "run_image.h"

#include <chrono>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "vision/image_decode.h"

namespace staticlm::cli {

ImageRun prepare_image_run(const std::string& model_dir, const std::optional<std::string>& config_file,
                           std::vector<std::string> sets, std::optional<std::int64_t> max_seq,
                           const std::string& prompt, const std::vector<std::string>& image_paths) {
  if (image_paths.size() > 1) {
    invalid_argument("run: " + std::to_string(image_paths.size()) +
                     " images given, but the static profile holds one image span: give one --image");
  }
  if (max_seq) sets.push_back("max_seq=" + std::to_string(*max_seq));
  ImageRun r;
  r.config = load_runtime_config(config_file, sets);
  r.builder = StaticInputBuilder::create(model_dir, r.config, /*reserve_decode_slot=*/true);
  if (!r.builder->has_vision()) {
    invalid_argument("run: --image needs a model with a vision tower; " + model_dir + " is text-only");
  }
  std::vector<RgbImage> images;
  for (const std::string& path : image_paths) images.push_back(decode_image_file(path));
  r.inputs = r.builder->build(prompt, images);
  if (!r.inputs.has_image()) internal_error("run: the static inputs hold no image");
  const VisionProfile& v = r.builder->options().profile;
  r.profile.max_seq = r.inputs.max_seq();
  r.profile.rope_sine = r.config.rope_sine;
  set_vision_profile(r.profile, v);
  return r;
}

void VisionTap::run(const std::string& name, std::span<const TensorView> inputs, std::span<const TensorBuffer> outputs) {
  if (name != kVisionPrefill) return inner_.run(name, inputs, outputs);
  const auto t0 = std::chrono::steady_clock::now();
  inner_.run(name, inputs, outputs);
  vision_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto* out = static_cast<const float*>(outputs[0].data);
  embeds_.assign(out, out + outputs[0].shape.numel());
  rows_ = outputs[0].shape[0];
}

}  // namespace staticlm::cli
