// Fitting an image to a static profile. A static export compiles the vision graph for one patch
// grid (e.g. 36 x 66 patches = 576 x 1056 pixels), so an image must produce exactly that grid.
//   strict: process the image as Hugging Face does (process_image); if its grid differs, that is
//           an error naming both grids. This is the reference behaviour: pixels are identical to
//           the dynamic processor's.
//   fit:    resize straight to the grid's pixel size (grid * 16), so any image runs. The cost is
//           aspect distortion: an image whose aspect ratio differs from the grid's is stretched,
//           and its pixels differ from what the dynamic processor would produce.
// The caller supplies the grid (from its profile); this file knows no profiles.
#pragma once

#include <string>

#include "vision/image_processor.h"

namespace staticlm {

enum class FitMode { kStrict, kFit };

// "strict" or "fit"; anything else is kInvalidArgument naming the value.
FitMode parse_fit_mode(const std::string& name);
const char* fit_mode_name(FitMode mode);

struct PatchGrid {
  int height = 0;  // patches down
  int width = 0;   // patches across
  bool operator==(const PatchGrid&) const = default;
};

// Throws kInvalidArgument unless both sides are positive multiples of 3 (the pooling kernel)
// and height * width <= max_soft_tokens * 9.
void check_patch_grid(PatchGrid grid, int max_soft_tokens);

// The image processed so that its patch grid is `grid`; pixel_values keep max_soft_tokens * 9 rows.
ProcessedImage process_image_for_grid(const RgbImage& image, PatchGrid grid, FitMode mode,
                                      int max_soft_tokens = kDefaultMaxSoftTokens);

}  // namespace staticlm
