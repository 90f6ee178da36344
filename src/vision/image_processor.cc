#include "vision/image_processor.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "vision/resize.h"

namespace staticlm {

void check_max_soft_tokens(int max_soft_tokens) {
  if (std::find(kSupportedMaxSoftTokens.begin(), kSupportedMaxSoftTokens.end(), max_soft_tokens) ==
      kSupportedMaxSoftTokens.end())
    invalid_argument("max_soft_tokens " + std::to_string(max_soft_tokens) + " is not supported; expected one of 70, 140, 280, 560, 1120");
}

ImageSize gemma4_target_size(int height, int width, int max_soft_tokens) {
  check_max_soft_tokens(max_soft_tokens);
  if (height <= 0 || width <= 0)
    invalid_argument("image size " + std::to_string(height) + " x " + std::to_string(width) + " (H x W) must be positive");
  // Double arithmetic in the order of Hugging Face's get_aspect_ratio_preserving_size.
  const int max_patches = max_patches_for(max_soft_tokens);
  const double target_px = static_cast<double>(max_patches) * kPatchSize * kPatchSize;
  const auto total_px = static_cast<std::int64_t>(height) * width;
  const double factor = std::sqrt(target_px / static_cast<double>(total_px));
  ImageSize t;
  t.height = static_cast<int>(std::floor(factor * height / kSideMultiple)) * kSideMultiple;
  t.width = static_cast<int>(std::floor(factor * width / kSideMultiple)) * kSideMultiple;
  // Both zero would need factor^2 * H * W < 48^2, but that product is target_px >= 70 * 9 * 256.
  if (t.height == 0 && t.width == 0) internal_error("gemma4_target_size: both sides rounded to zero");
  const int max_side = (max_patches / (kPoolingKernel * kPoolingKernel)) * kSideMultiple;
  if (t.height == 0) {  // a very wide strip: one row of soft tokens
    t.height = kSideMultiple;
    t.width = std::min(static_cast<int>(std::floor(static_cast<double>(width) / height)) * kSideMultiple, max_side);
  } else if (t.width == 0) {  // a very tall strip: one column
    t.width = kSideMultiple;
    t.height = std::min(static_cast<int>(std::floor(static_cast<double>(height) / width)) * kSideMultiple, max_side);
  }
  return t;
}

float rescale_pixel(std::uint8_t v) {
  static const float kScale = static_cast<float>(1.0 / 255.0);  // torch casts the Python float to f32
  return static_cast<float>(v) * kScale;
}

ProcessedImage patchify_image(const RgbImage& img, int max_soft_tokens) {
  check_max_soft_tokens(max_soft_tokens);
  const int max_patches = max_patches_for(max_soft_tokens);
  if (img.width <= 0 || img.height <= 0 || img.width % kSideMultiple != 0 || img.height % kSideMultiple != 0)
    invalid_argument("patchify: image " + std::to_string(img.width) + " x " + std::to_string(img.height) +
                     " (W x H) must have positive sides that are multiples of 48");
  ProcessedImage out;
  out.grid_height = img.height / kPatchSize;
  out.grid_width = img.width / kPatchSize;
  const int real = out.grid_height * out.grid_width;
  if (real > max_patches)
    invalid_argument("patchify: image " + std::to_string(img.width) + " x " + std::to_string(img.height) + " has " +
                     std::to_string(real) + " patches, over the " + std::to_string(max_patches) +
                     " of max_soft_tokens " + std::to_string(max_soft_tokens));
  out.num_soft_tokens = real / (kPoolingKernel * kPoolingKernel);

  float lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = rescale_pixel(static_cast<std::uint8_t>(v));
  out.pixel_values = Tensor(DType::kF32, Shape{max_patches, kPatchValues});  // zero-filled: padding
  out.position_ids = Tensor(DType::kI64, Shape{max_patches, 2});
  auto pixels = out.pixel_values.as<float>();
  auto pos = out.position_ids.as<std::int64_t>();
  for (int gy = 0; gy < out.grid_height; ++gy) {
    for (int gx = 0; gx < out.grid_width; ++gx) {
      const std::size_t p = static_cast<std::size_t>(gy) * out.grid_width + gx;
      float* dst = &pixels[p * kPatchValues];
      for (int py = 0; py < kPatchSize; ++py) {
        // One patch row is 16 consecutive RGB pixels: 48 values already in (px, c) order.
        const std::uint8_t* src = img.row(gy * kPatchSize + py) + static_cast<std::size_t>(gx) * kPatchSize * 3;
        for (int i = 0; i < kPatchSize * 3; ++i) *dst++ = lut[src[i]];
      }
      pos[2 * p] = gx;
      pos[2 * p + 1] = gy;
    }
  }
  for (std::size_t p = static_cast<std::size_t>(real); p < static_cast<std::size_t>(max_patches); ++p)
    pos[2 * p] = pos[2 * p + 1] = -1;
  return out;
}

ProcessedImage process_image(const RgbImage& image, int max_soft_tokens) {
  const ImageSize t = gemma4_target_size(image.height, image.width, max_soft_tokens);
  if (t.height == image.height && t.width == image.width) return patchify_image(image, max_soft_tokens);
  return patchify_image(resize_bicubic(image, t.width, t.height), max_soft_tokens);
}

}  // namespace staticlm
