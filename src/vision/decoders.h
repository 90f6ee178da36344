// The per-format decoders behind decode_image (internal to src/vision). Each takes the whole
// file in memory, checks the pixel limit from the header, and throws staticlm::Error with a
// message that starts with `name`.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "vision/image_decode.h"

namespace staticlm::detail {

RgbImage decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& name, const DecodeOptions& options);
RgbImage decode_png(std::span<const std::uint8_t> bytes, const std::string& name, const DecodeOptions& options);

// Throws kOutOfRange when width * height is over the limit, kInvalidFile when either is zero.
void check_image_size(std::uint64_t width, std::uint64_t height, const std::string& name, const DecodeOptions& options);

}  // namespace staticlm::detail
