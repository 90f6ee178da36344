// RgbImage: a decoded picture as 8-bit RGB, the form every stage of the image side works on.
// A plain value type that owns its pixels; copying it copies them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace staticlm {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> pixels;  // [height, width, 3], row-major, channels R, G, B

  RgbImage() = default;
  // A zero-filled (black) image.
  RgbImage(int w, int h)
      : width(w), height(h), pixels(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3, 0) {}

  std::size_t stride() const { return static_cast<std::size_t>(width) * 3; }
  std::uint8_t* row(int y) { return pixels.data() + static_cast<std::size_t>(y) * stride(); }
  const std::uint8_t* row(int y) const { return pixels.data() + static_cast<std::size_t>(y) * stride(); }
};

}  // namespace staticlm
