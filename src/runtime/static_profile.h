// The static profile: the fixed shapes every subgraph is exported for. StaticLayout is the text
// side ([text prefix][image soft-token slots][text suffix][padding] in max_seq slots, batch 1);
// VisionProfile is the image side (a fixed patch grid padded to max_soft_tokens * k^2 patches,
// whose pooled soft tokens fill the layout's slots). Field names and rules follow Samsung TICO's
// Gemma4StaticVisionProfile and StaticGemma4Layout (spec/static-runtime.md (a)).
//
// Plain value types: callers own them; the registry returns references to static storage.
// Every check throws kInvalidArgument with a message naming the profile, the field, its value
// and the rule it breaks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

namespace staticlm {

inline constexpr const char* kDefaultVisionProfile = "e2b_66x36_264";

struct StaticLayout {
  std::int64_t max_seq = 2048;
  std::int64_t visual_start_idx = 0;
  std::int64_t num_visual_tokens = 0;
  std::int64_t batch_size = 1;

  std::int64_t visual_end_idx() const { return visual_start_idx + num_visual_tokens; }
  // batch_size == 1, max_seq > 0, start >= 0, count >= 0, start + count <= max_seq.
  void validate() const;
};

// What a checkpoint's processor files say (tokenizer_config.json, preprocessor_config.json,
// processor_config.json); absent values are not checked.
struct ProcessorSettings {
  std::optional<bool> add_bos_token;
  std::optional<std::int64_t> patch_size, pooling_kernel_size, max_soft_tokens;  // image processor
  std::optional<std::int64_t> image_seq_length;                                  // processor
};

// Upper bounds VisionProfile::validate() puts on a profile's extents (a manifest is a file from
// anywhere; these keep every derived size, e.g. num_patches(), far from overflow and allocatable).
inline constexpr std::int64_t kMaxProfileSoftTokens = 16384;
inline constexpr std::int64_t kMaxProfilePooling = 16;
inline constexpr std::int64_t kMaxProfilePatchSize = 1024;
inline constexpr std::int64_t kMaxProfileSequence = std::int64_t{1} << 24;

struct VisionProfile {
  std::string name;
  std::int64_t visual_start_idx = 0;
  std::int64_t num_visual_tokens = 0;
  std::int64_t max_soft_tokens = 0;
  std::int64_t patch_grid_height = 0;  // H, in patches
  std::int64_t patch_grid_width = 0;   // W, in patches
  std::int64_t patch_size = 0;         // pixels per patch side
  std::int64_t pooling_kernel_size = 0;  // k: k x k patches pool into one soft token
  std::int64_t batch_size = 1;
  bool tokenizer_add_bos_token = false;

  // Derived values (TICO's properties, same names).
  std::int64_t num_valid_patches() const { return patch_grid_height * patch_grid_width; }
  std::int64_t num_patches() const { return max_soft_tokens * pooling_kernel_size * pooling_kernel_size; }
  std::int64_t num_padding_patches() const { return num_patches() - num_valid_patches(); }
  std::int64_t soft_grid_height() const { return patch_grid_height / pooling_kernel_size; }
  std::int64_t soft_grid_width() const { return patch_grid_width / pooling_kernel_size; }
  std::int64_t image_height() const { return patch_grid_height * patch_size; }
  std::int64_t image_width() const { return patch_grid_width * patch_size; }
  std::int64_t patch_vector_size() const { return 3 * patch_size * patch_size; }
  std::int64_t visual_end_idx() const { return visual_start_idx + num_visual_tokens; }

  // The profile's own geometry: non-empty name, batch 1, positive counts and sizes, start >= 0,
  // grid divisible by k, num_visual_tokens <= max_soft_tokens and == soft grid area, valid
  // patches within capacity (implied by the two before).
  void validate() const;
  // validate() plus: the visual span ends within max_seq, and (when given) the model's vision
  // config agrees on patch_size, pooling_kernel_size and default_output_length.
  void validate_for_model(std::int64_t max_seq, const VisionConfig* vision) const;
  // The tokenizer must add BOS exactly when the profile says so (otherwise the span moves).
  void validate_tokenizer_add_bos(bool add_bos_token) const;
  // TICO's validate_processor: the tokenizer's add_bos_token, the image processor's patch_size,
  // pooling_kernel_size and max_soft_tokens, and the processor's image_seq_length (== max_soft_tokens)
  // must agree with the profile; settings that are not given are skipped.
  void validate_processor(const ProcessorSettings& settings) const;

  // The layout whose visual span is this profile's.
  StaticLayout layout(std::int64_t max_seq) const;

  // Canonical image position ids [1, num_patches, 2] (I64): (x, y) = (i % W, i / W) for the
  // valid patches in row-major order, then (-1, -1) for every padding patch.
  Tensor image_position_ids() const;
  // sha256 of those int64 little-endian bytes (TICO's position_ids_sha256()).
  std::string position_ids_sha256() const;

  // Processor-output checks (spec (a) validate_processor_outputs), each refusing with the
  // expected and actual values:
  // ids [T] (or [1,T] flattened): positions equal to image_token_id must be exactly
  // [visual_start_idx, visual_end_idx): non-empty, contiguous, right start, right count, no stray ids.
  void validate_text_input_ids(std::span<const std::int64_t> ids, std::int64_t image_token_id) const;
  // ids must equal image_position_ids() exactly; the error gives expected/actual shape,
  // valid-patch count and sha256.
  void validate_image_position_ids(const TensorView& ids) const;
  // pixel_values must be [batch_size, num_patches, patch_vector_size].
  void validate_pixel_values_shape(const Shape& shape) const;
  // num_soft_tokens_per_image must hold exactly one value, equal to num_visual_tokens.
  void validate_soft_token_counts(std::span<const std::int64_t> counts) const;
};

// Registered profiles: e2b_66x36_264 (the default) and e2b_57x42_266.
const std::vector<VisionProfile>& registered_vision_profiles();
bool is_registered_vision_profile(const std::string& name);
// Throws kInvalidArgument naming the unknown profile and listing the registered ones.
const VisionProfile& registered_vision_profile(const std::string& name);

// An inline ("custom") profile: the five layout fields are required; patch_size and
// pooling_kernel_size default to the model's vision config; image_height / image_width, when
// given, must equal what the patch grid implies.
struct InlineVisionProfile {
  std::string name = "custom";
  std::optional<std::int64_t> visual_start_idx, num_visual_tokens, max_soft_tokens;
  std::optional<std::int64_t> patch_grid_height, patch_grid_width;
  std::optional<std::int64_t> patch_size, pooling_kernel_size;
  std::optional<std::int64_t> image_height, image_width;
  bool tokenizer_add_bos_token = false;
};

// Builds and validates (validate_for_model) an inline profile. `vision` may be null only when
// patch_size and pooling_kernel_size are both given.
VisionProfile build_inline_vision_profile(const InlineVisionProfile& fields, std::int64_t max_seq,
                                          const VisionConfig* vision);

}  // namespace staticlm
