#include "vision/resize.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"

namespace staticlm {

namespace {

constexpr int kPrecisionBits = 22;  // 32 bits - 8 for the value - 2 for overshoot of negative lobes

// Keys' cubic convolution kernel with a = -0.5; the operations are written in Pillow's order so
// that the double results, and hence the rounded weights, are the same.
double bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

std::uint8_t clamp_fixed(std::int32_t sum) {
  const std::int32_t v = sum >> kPrecisionBits;  // arithmetic shift: floor for negative sums
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// Rows [row0, row1) of `in`, resampled along x into `out` (out.height == row1 - row0).
void horizontal_pass(const RgbImage& in, int row0, const ResampleTaps& taps, RgbImage& out) {
  for (int y = 0; y < out.height; ++y) {
    const std::uint8_t* src = in.row(row0 + y);
    std::uint8_t* dst = out.row(y);
    for (int x = 0; x < out.width; ++x) {
      const std::int32_t* w = &taps.weights[static_cast<std::size_t>(x) * taps.ksize];
      const std::uint8_t* p = src + 3 * static_cast<std::size_t>(taps.first[x]);
      std::int32_t r = 1 << (kPrecisionBits - 1), g = r, b = r;
      for (int t = 0; t < taps.count[x]; ++t, p += 3) {
        r += p[0] * w[t];
        g += p[1] * w[t];
        b += p[2] * w[t];
      }
      dst[3 * x] = clamp_fixed(r);
      dst[3 * x + 1] = clamp_fixed(g);
      dst[3 * x + 2] = clamp_fixed(b);
    }
  }
}

// Resamples `in` along y into `out`; taps index rows of `in` shifted by -row0.
void vertical_pass(const RgbImage& in, int row0, const ResampleTaps& taps, RgbImage& out) {
  const std::size_t n = out.stride();
  std::vector<std::int32_t> acc(n);
  for (int y = 0; y < out.height; ++y) {
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    const std::int32_t* w = &taps.weights[static_cast<std::size_t>(y) * taps.ksize];
    for (int t = 0; t < taps.count[y]; ++t) {
      const std::uint8_t* src = in.row(taps.first[y] - row0 + t);
      const std::int32_t wt = w[t];
      for (std::size_t i = 0; i < n; ++i) acc[i] += src[i] * wt;
    }
    std::uint8_t* dst = out.row(y);
    for (std::size_t i = 0; i < n; ++i) dst[i] = clamp_fixed(acc[i]);
  }
}

}  // namespace

ResampleTaps bicubic_taps(int in_size, int out_size) {
  if (in_size <= 0 || out_size <= 0)
    invalid_argument("bicubic_taps: sizes must be positive (got " + std::to_string(in_size) + " -> " +
                     std::to_string(out_size) + ")");
  // Pillow takes the source extent from a float box; sizes below 2^24 are exact in float.
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double filterscale = std::max(scale, 1.0);  // stretch the kernel only when shrinking
  const double support = 2.0 * filterscale;
  ResampleTaps taps;
  taps.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<std::size_t>(out_size));
  taps.count.resize(static_cast<std::size_t>(out_size));
  taps.weights.assign(static_cast<std::size_t>(out_size) * taps.ksize, 0);
  std::vector<double> k(static_cast<std::size_t>(taps.ksize));
  const double inv_filterscale = 1.0 / filterscale;
  for (int i = 0; i < out_size; ++i) {
    const double center = (i + 0.5) * scale;
    // Pillow rounds the window ends with a truncating cast of (value + 0.5), then clamps.
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = hi - lo;
    double sum = 0.0;
    for (int t = 0; t < n; ++t) {
      k[t] = bicubic((static_cast<double>(t + lo) - center + 0.5) * inv_filterscale);
      sum += k[t];
    }
    std::int32_t* w = &taps.weights[static_cast<std::size_t>(i) * taps.ksize];
    for (int t = 0; t < n; ++t) {
      const double v = sum != 0.0 ? k[t] / sum : k[t];
      const double fixed = v * (1 << kPrecisionBits);
      w[t] = static_cast<std::int32_t>(v < 0 ? -0.5 + fixed : 0.5 + fixed);  // round half away from 0
    }
    taps.first[i] = lo;
    taps.count[i] = n;
  }
  return taps;
}

RgbImage resize_bicubic(const RgbImage& image, int width, int height) {
  if (image.width <= 0 || image.height <= 0 || image.pixels.size() != image.stride() * image.height)
    invalid_argument("resize_bicubic: empty or malformed input image (" + std::to_string(image.width) + " x " +
                     std::to_string(image.height) + ")");
  if (width <= 0 || height <= 0)
    invalid_argument("resize_bicubic: output size must be positive (got " + std::to_string(width) + " x " +
                     std::to_string(height) + ")");
  const bool need_h = width != image.width, need_v = height != image.height;
  if (!need_h && !need_v) return image;

  const ResampleTaps vtaps = need_v ? bicubic_taps(image.height, height) : ResampleTaps{};
  // Only the rows the vertical pass reads go through the horizontal pass.
  const int row0 = need_v ? vtaps.first.front() : 0;
  const int row1 = need_v ? vtaps.first.back() + vtaps.count.back() : image.height;

  RgbImage horizontal;
  const RgbImage* src = &image;
  if (need_h) {
    horizontal = RgbImage(width, row1 - row0);
    horizontal_pass(image, row0, bicubic_taps(image.width, width), horizontal);
    src = &horizontal;
  }
  if (!need_v) return horizontal;
  RgbImage out(width, height);
  vertical_pass(*src, need_h ? row0 : 0, vtaps, out);
  return out;
}

}  // namespace staticlm
