#include "vision/image_decode.h"

#include <cstring>

#include "base/error.h"
#include "base/mmap.h"
#include "vision/decoders.h"

namespace staticlm {

namespace {

bool starts_with(std::span<const std::uint8_t> b, const char* sig, std::size_t n, std::size_t at = 0) {
  return b.size() >= at + n && std::memcmp(b.data() + at, sig, n) == 0;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kGif: return "GIF";
    case ImageFormat::kBmp: return "BMP";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kTiff: return "TIFF";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

}  // namespace

ImageFormat sniff_image_format(std::span<const std::uint8_t> b) {
  if (starts_with(b, "\xFF\xD8\xFF", 3)) return ImageFormat::kJpeg;
  if (starts_with(b, "\x89PNG\r\n\x1A\n", 8)) return ImageFormat::kPng;
  if (starts_with(b, "GIF87a", 6) || starts_with(b, "GIF89a", 6)) return ImageFormat::kGif;
  if (starts_with(b, "BM", 2)) return ImageFormat::kBmp;
  if (starts_with(b, "RIFF", 4) && starts_with(b, "WEBP", 4, 8)) return ImageFormat::kWebp;
  if (starts_with(b, "II*\0", 4) || starts_with(b, "MM\0*", 4)) return ImageFormat::kTiff;
  return ImageFormat::kUnknown;
}

ImageFormat decodable_format(std::span<const std::uint8_t> bytes, const std::string& name) {
  if (bytes.empty()) invalid_file(name + ": the file is empty; expected a JPEG or PNG image");
  const ImageFormat format = sniff_image_format(bytes);
  if (format == ImageFormat::kUnknown) invalid_file(name + ": not a JPEG or PNG image (unrecognised signature)");
  if (format != ImageFormat::kJpeg && format != ImageFormat::kPng) {
    unsupported(name + ": " + format_name(format) + " images are not supported; expected JPEG or PNG");
  }
  return format;
}

RgbImage decode_image(std::span<const std::uint8_t> bytes, const std::string& name, const DecodeOptions& options) {
  if (decodable_format(bytes, name) == ImageFormat::kJpeg) return detail::decode_jpeg(bytes, name, options);
  return detail::decode_png(bytes, name, options);
}

RgbImage decode_image_file(const std::string& path, const DecodeOptions& options) {
  auto file = MappedFile::open(path);
  return decode_image({file->data(), file->size()}, path, options);
}

void check_image_file(const std::string& path) {
  auto file = MappedFile::open(path);
  decodable_format({file->data(), file->size()}, path);
}

namespace detail {

void check_image_size(std::uint64_t width, std::uint64_t height, const std::string& name, const DecodeOptions& options) {
  if (width == 0 || height == 0)
    invalid_file(name + ": image has zero width or height (" + std::to_string(width) + " x " + std::to_string(height) + ")");
  const std::uint64_t pixels = width * height;  // both < 2^32: no overflow
  if (pixels > options.max_pixels)
    out_of_range(name + ": image is " + std::to_string(width) + " x " + std::to_string(height) + " = " +
                 std::to_string(pixels) + " pixels, over the limit of " + std::to_string(options.max_pixels) +
                 " (a decompression-bomb guard; raise it with --max-pixels if the image is trusted)");
}

}  // namespace detail

}  // namespace staticlm
