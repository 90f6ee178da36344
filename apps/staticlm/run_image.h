// The image side of `staticlm run`: the static inputs of a prompt with one image (through the
// runtime config's vision profile and the StaticInputBuilder), the backend profile whose vision
// graphs match it, and a Backend decorator that times vision_prefill and keeps its output (the
// image encode is reported apart from prefill, and --dump-logits writes the rows).
//
// Ownership: ImageRun owns its builder and inputs; VisionTap borrows the backend it wraps,
// which must outlive it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "runtime/static_inputs.h"
#include "staticlm/backend.h"

namespace staticlm::cli {

struct ImageRun {
  RuntimeConfig config;
  std::unique_ptr<StaticInputBuilder> builder;
  StaticInputs inputs;
  SubgraphProfile profile;  // max_seq, rope_sine and the vision profile's span and grid
};

// config_file / sets: the runtime config (runtime/runtime_config.h keys; --max-seq wins when
// given). prompt: the text with "<|image|>" placeholders (already chat-formatted when asked).
// Refuses (kInvalidArgument) more than one image: the static layout holds one image span.
ImageRun prepare_image_run(const std::string& model_dir, const std::optional<std::string>& config_file,
                           std::vector<std::string> sets, std::optional<std::int64_t> max_seq,
                           const std::string& prompt, const std::vector<std::string>& image_paths);

class VisionTap : public Backend {
 public:
  explicit VisionTap(Backend& inner) : inner_(inner) {}
  std::string name() const override { return inner_.name(); }
  const SubgraphProfile& profile() const override { return inner_.profile(); }
  const std::vector<SubgraphSignature>& signatures() const override { return inner_.signatures(); }
  void run(const std::string& name, std::span<const TensorView> inputs,
           std::span<const TensorBuffer> outputs) override;

  double vision_seconds() const { return vision_seconds_; }
  const std::vector<float>& vision_embeds() const { return embeds_; }  // [rows, D] of the last call
  std::int64_t vision_rows() const { return rows_; }

 private:
  Backend& inner_;
  double vision_seconds_ = 0;
  std::vector<float> embeds_;
  std::int64_t rows_ = 0;
};

}  // namespace staticlm::cli
