// StaticInputBuilder: prompt + image -> StaticInputs. It runs the processor as Hugging Face's
// Gemma4Processor does for one prompt, unpadded (image -> pixel_values / image_position_ids,
// each <|image|> expanded to its soft-token span, tokenization), then build_static_inputs checks
// that output against the static profile and lays it out in max_seq slots.
//
// The builder owns its tokenizer and model config; build() and process() are const.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "model/config.h"
#include "runtime/runtime_config.h"
#include "runtime/static_inputs.h"
#include "staticlm/backend.h"
#include "text/tokenizer.h"
#include "vision/rgb_image.h"

namespace staticlm {

// The backend profile for inputs laid out with `vision`: its image span and patch grid set, the
// other fields (max_seq, rope_sine) left as given.
void set_vision_profile(SubgraphProfile& profile, const VisionProfile& vision);

class StaticInputBuilder {
 public:
  // Reads config.json and tokenizer.json from a checkpoint directory, and the processor
  // settings of tokenizer_config.json (add_bos_token), preprocessor_config.json and
  // processor_config.json when present; resolves the config's profile against the model: a
  // model with a vision tower gets the validated vision profile and layout (the processor
  // settings must agree with it, TICO's validate_processor), a text-only model a layout without
  // image span.
  // text_only lays out text prompts only (no image span, the vision profile left unresolved),
  // as `run` does for a prompt without an image; an image is then refused.
  static std::unique_ptr<StaticInputBuilder> create(const std::string& model_dir, const RuntimeConfig& config,
                                                    bool reserve_decode_slot = false, bool text_only = false);

  // The processor's raw, unpadded output for one prompt (the text as given, with "<|image|>"
  // placeholders) and its images. More than one image is refused: the static layout has one
  // image span. The image is processed as Hugging Face does (image_fit strict, refusing an
  // image whose patch grid is not the profile's) or resized to the profile's grid (fit).
  ProcessorBatch process(const std::string& prompt, std::span<const RgbImage> images) const;

  // process()'s text half: each "<|image|>" expanded to its count of soft tokens (one count per
  // placeholder), then tokenized; no pixels. What a layout needs whose image span a cache holds
  // already (the counts are the ones process() gave for the image).
  ProcessorBatch process_text(const std::string& prompt, std::span<const int> soft_tokens) const;

  // process() then build_static_inputs().
  StaticInputs build(const std::string& prompt, std::span<const RgbImage> images) const;

  const ModelConfig& model_config() const { return model_; }
  const StaticInputOptions& options() const { return options_; }
  bool has_vision() const { return model_.vision.has_value(); }
  const Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  StaticInputBuilder() = default;
  ModelConfig model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  bool add_bos_token_ = false;
  bool text_only_ = false;
  ImageFit image_fit_ = ImageFit::kStrict;
  StaticInputOptions options_;
};

}  // namespace staticlm
