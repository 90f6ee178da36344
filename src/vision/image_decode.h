// Image decoding: JPEG (libjpeg-turbo) and PNG (libpng) into RgbImage, with the pixels that
// Pillow's Image.open(f).convert("RGB") gives for the same file:
//   - grey, grey+alpha, palette, RGBA, CMYK inputs become RGB; alpha is dropped, never composited
//     (palette and tRNS transparency are ignored too);
//   - 16-bit samples keep their high byte, except 16-bit grey without alpha, which Pillow opens as
//     a 32-bit integer image and clamps to 0..255 when converting;
//   - EXIF orientation is not applied (Image.open does not apply it either).
// Every failure is a staticlm::Error whose message starts with the file name: kInvalidFile for an
// empty, corrupt, truncated or zero-sized image, kUnsupported for another format, kOutOfRange for
// an image over the pixel limit (checked from the header, before any pixel memory is allocated).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "vision/rgb_image.h"

namespace staticlm {

// Pillow refuses images over 2 x Image.MAX_IMAGE_PIXELS (a decompression bomb); so do we, by default.
inline constexpr std::uint64_t kDefaultMaxImagePixels = 2ull * 89'478'485ull;

struct DecodeOptions {
  std::uint64_t max_pixels = kDefaultMaxImagePixels;  // width * height above this is refused
};

enum class ImageFormat { kUnknown, kJpeg, kPng, kGif, kBmp, kWebp, kTiff };

// The format named by the first bytes of a file (its signature).
ImageFormat sniff_image_format(std::span<const std::uint8_t> bytes);

// The format of bytes that decode_image can decode (JPEG or PNG); the error decode_image gives
// for an empty file or another format.
ImageFormat decodable_format(std::span<const std::uint8_t> bytes, const std::string& name);

// Decodes bytes; `name` (usually the path) starts every error message.
RgbImage decode_image(std::span<const std::uint8_t> bytes, const std::string& name, const DecodeOptions& options = {});

// Reads and decodes a file.
RgbImage decode_image_file(const std::string& path, const DecodeOptions& options = {});

// The file's errors decode_image_file finds without decoding (missing, empty, not JPEG or PNG):
// commands check their images before the slow checkpoint load.
void check_image_file(const std::string& path);

}  // namespace staticlm
