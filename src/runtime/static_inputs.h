// The fixed-shape input contract (TICO's build_static_inputs, spec/static-runtime.md (b)): the
// unpadded processor output for one prompt is checked against the static profile, then laid out
// in max_seq slots, right-padded with the pad id, with the image placeholder ids replaced by the
// pad id (the vision graph's soft tokens are fused into that span later).
//
// Value types: a ProcessorBatch and StaticInputs own their tensors; build_static_inputs copies
// what it keeps, so the batch may be dropped afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/static_profile.h"
#include "tensor/tensor.h"

namespace staticlm {

// What the processor returns for one prompt, unpadded (Hugging Face's processor(text, images,
// padding=False) for batch 1).
struct ProcessorBatch {
  Tensor input_ids;                          // I64 [1, T], each <|image|> expanded to its span
  std::optional<Tensor> attention_mask;      // [1, T] (BOOL/U8/I64...), when the processor gives one
  std::optional<Tensor> pixel_values;        // F32 [1, N, 3 * patch^2], with an image
  std::optional<Tensor> image_position_ids;  // I64 [1, N, 2], with an image
  std::vector<std::int64_t> num_soft_tokens_per_image;  // empty when not given
};

struct StaticInputOptions {
  StaticLayout layout;                       // max_seq and the image span
  VisionProfile profile;                     // checked against the processor output
  std::optional<std::int64_t> pad_token_id;  // text_config.pad_token_id
  std::optional<std::int64_t> image_token_id;  // the top-level config's, never text_config's
  std::string padding_side = "right";
  // Refuse prompts that fill all max_seq slots, so that decoding has a slot (T <= max_seq - 1).
  bool reserve_decode_slot = false;
};

struct StaticInputs {
  Tensor llm_input_ids;   // I64 [1, S]: ids[:T], pad id after; image placeholder ids -> pad id
  Tensor attention_mask;  // BOOL [1, S]: true for the T valid tokens
  Tensor valid_length;    // I64 [1]: T
  std::optional<Tensor> pixel_values;        // F32 [1, N, 3 * patch^2], with an image
  std::optional<Tensor> image_position_ids;  // I64 [1, N, 2], with an image
  Tensor raw_input_ids;   // I64 [1, T]: the unpadded ids, image placeholders kept

  std::int64_t max_seq() const { return llm_input_ids.shape()[1]; }
  std::int64_t length() const { return valid_length.as<std::int64_t>()[0]; }
  bool has_image() const { return pixel_values.has_value(); }
};

// Checks, in TICO's order, each a one-line error naming the values involved:
// the valid mask (attention_mask, else ids != pad id, else all valid; a mask of another shape
// is refused) and right padding ("Right padding expected but not found"); T <= max_seq ("Input
// sequence length T=.. exceeds max_seq .."), T <= max_seq - 1 when a decode slot is reserved;
// image_token_id present; then, with an image, the profile's checks of the processor output
// (span [visual_start_idx, visual_end_idx) exactly, pixel_values shape, canonical position ids,
// soft-token count), and without one, no image placeholder ids at all.
StaticInputs build_static_inputs(const ProcessorBatch& batch, const StaticInputOptions& options);

}  // namespace staticlm
