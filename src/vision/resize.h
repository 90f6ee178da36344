// Bicubic resize that is bit-exact with Pillow's Image.resize(size, Image.BICUBIC) on 8-bit RGB
// (Pillow's libImaging/Resample.c, the resampler Hugging Face's PIL image backend calls).
//
// The facts it reproduces: the Keys cubic with a = -0.5 and support 2; when shrinking, the kernel
// is stretched by the scale factor (antialiasing), so support = 2 * max(in/out, 1); per output
// sample the taps are normalised to sum 1 in double precision, then rounded to 22-bit fixed
// point; sums start at 0.5 (1 << 21), are shifted right by 22 and clamped to 0..255. The
// horizontal pass runs first, then the vertical one; a pass whose size does not change is
// skipped, and resizing to the same size returns a copy.
#pragma once

#include <cstdint>
#include <vector>

#include "vision/rgb_image.h"

namespace staticlm {

// Returns a new image of width x height; the input is not modified. Throws kInvalidArgument for
// an empty input or a non-positive size.
RgbImage resize_bicubic(const RgbImage& image, int width, int height);

// The taps of one axis, exposed for tests: output sample i reads inputs first[i] ..
// first[i] + count[i] - 1 with the fixed-point weights weights[i * ksize + t] (scale 1 << 22).
struct ResampleTaps {
  int ksize = 0;
  std::vector<int> first;                // [out_size]
  std::vector<int> count;                // [out_size]
  std::vector<std::int32_t> weights;     // [out_size, ksize]
};
ResampleTaps bicubic_taps(int in_size, int out_size);

}  // namespace staticlm
