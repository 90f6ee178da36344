#include "vision/static_fit.h"

#include "base/error.h"
#include "vision/resize.h"

namespace staticlm {

namespace {

std::string grid_text(PatchGrid g) {
  return std::to_string(g.height) + " x " + std::to_string(g.width) + " patches (" + std::to_string(g.height * kPatchSize) +
         " x " + std::to_string(g.width * kPatchSize) + " pixels, H x W)";
}

}  // namespace

FitMode parse_fit_mode(const std::string& name) {
  if (name == "strict") return FitMode::kStrict;
  if (name == "fit") return FitMode::kFit;
  invalid_argument("image fit mode '" + name + "' is not known; expected 'strict' or 'fit'");
}

const char* fit_mode_name(FitMode mode) { return mode == FitMode::kStrict ? "strict" : "fit"; }

void check_patch_grid(PatchGrid grid, int max_soft_tokens) {
  check_max_soft_tokens(max_soft_tokens);
  if (grid.height <= 0 || grid.width <= 0 || grid.height % kPoolingKernel != 0 || grid.width % kPoolingKernel != 0)
    invalid_argument("patch grid " + std::to_string(grid.height) + " x " + std::to_string(grid.width) +
                     " must have positive sides that are multiples of 3");
  if (static_cast<long long>(grid.height) * grid.width > max_patches_for(max_soft_tokens))
    invalid_argument("patch grid " + grid_text(grid) + " has more than the " + std::to_string(max_patches_for(max_soft_tokens)) +
                     " patches of max_soft_tokens " + std::to_string(max_soft_tokens));
}

ProcessedImage process_image_for_grid(const RgbImage& image, PatchGrid grid, FitMode mode, int max_soft_tokens) {
  check_patch_grid(grid, max_soft_tokens);
  if (mode == FitMode::kFit) {
    const int h = grid.height * kPatchSize, w = grid.width * kPatchSize;
    if (image.height == h && image.width == w) return patchify_image(image, max_soft_tokens);
    return patchify_image(resize_bicubic(image, w, h), max_soft_tokens);
  }
  const ImageSize t = gemma4_target_size(image.height, image.width, max_soft_tokens);
  const PatchGrid got{t.height / kPatchSize, t.width / kPatchSize};
  if (got != grid)
    invalid_argument("image " + std::to_string(image.height) + " x " + std::to_string(image.width) +
                     " (H x W) gives a patch grid of " + grid_text(got) + ", but the static profile is compiled for " +
                     grid_text(grid) + "; use fit mode to resize any image to the profile's grid");
  return process_image(image, max_soft_tokens);
}

}  // namespace staticlm
