// Gemma 4 image processing (spec gemma4.md §5.1): an RgbImage becomes the vision tower's inputs.
//   1. target size: the largest size with sides multiple of 48 (patch 16 x pooling 3) whose patch
//      count fits max_soft_tokens * 9, keeping the aspect ratio; degenerate thin images get one
//      48-pixel side (gemma4_target_size);
//   2. resize to it with Pillow-exact bicubic (skipped when the image already has that size);
//   3. rescale: float32(v) * float32(1/255), the f32 multiply of Hugging Face's default
//      (torchvision) Gemma 4 processor; no mean/std normalisation;
//   4. patchify into rows of 768 values in (py, px, c) order, patches row-major over the grid;
//   5. positions (x, y) per patch; padding rows up to max_soft_tokens * 9 hold zero pixels and
//      position (-1, -1).
// ProcessedImage owns its tensors.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/tensor.h"
#include "vision/rgb_image.h"

namespace staticlm {

inline constexpr int kPatchSize = 16;
inline constexpr int kPoolingKernel = 3;                            // soft token = 3 x 3 patches
inline constexpr int kPatchValues = kPatchSize * kPatchSize * 3;    // 768
inline constexpr int kSideMultiple = kPatchSize * kPoolingKernel;   // 48
inline constexpr int kDefaultMaxSoftTokens = 280;
inline constexpr std::array<int, 5> kSupportedMaxSoftTokens = {70, 140, 280, 560, 1120};

// Throws kInvalidArgument naming the value and the allowed ones unless it is supported.
void check_max_soft_tokens(int max_soft_tokens);

// Rows of pixel_values: max_soft_tokens * 9 (2520 for 280).
inline int max_patches_for(int max_soft_tokens) { return max_soft_tokens * kPoolingKernel * kPoolingKernel; }

struct ImageSize {
  int height = 0;
  int width = 0;
  bool operator==(const ImageSize&) const = default;
};

// The aspect-preserving target size of §5.1 for an image of height x width (both >= 1).
ImageSize gemma4_target_size(int height, int width, int max_soft_tokens);

// float32(v) * float32(1/255), correctly rounded f32 product (126 of the 256 levels differ by
// one ulp from the correctly rounded v / 255 that the PIL backend produces).
float rescale_pixel(std::uint8_t v);

struct ProcessedImage {
  Tensor pixel_values;       // F32 [max_patches, 768]; row p = patch (p / grid_width, p % grid_width)
  Tensor position_ids;       // I64 [max_patches, 2]; (x, y) = (column, row) of the patch, or (-1, -1)
  int num_soft_tokens = 0;   // grid_height * grid_width / 9
  int grid_height = 0;       // patches down (resized height / 16)
  int grid_width = 0;        // patches across
};

// Steps 1-5 for one image.
ProcessedImage process_image(const RgbImage& image, int max_soft_tokens = kDefaultMaxSoftTokens);

// Steps 3-5 for an image already at its final size: both sides multiples of 48 and at most
// max_soft_tokens * 9 patches (kInvalidArgument otherwise).
ProcessedImage patchify_image(const RgbImage& resized, int max_soft_tokens = kDefaultMaxSoftTokens);

}  // namespace staticlm
