// PNG through libpng. Only lossless expansions are asked of libpng (palette to RGB, 1/2/4-bit
// grey to 8 bits, 16 to 8 bits by keeping the high byte, Adam7 de-interlacing); the conversion
// to RGB (replicating grey, dropping alpha) is done here, the way Pillow's convert("RGB") does it.
// Gamma, colour profiles and transparency chunks are ignored, as Pillow ignores them.
//
// libpng reports errors through a callback that must not return: it longjmps back to
// decode_png. Everything alive in decode_png then was constructed before setjmp, so the jump
// skips no destructor; the state owning the libpng handles is destroyed by the exception.
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "vision/decoders.h"

namespace staticlm::detail {

namespace {

struct PngInput {
  std::span<const std::uint8_t> bytes;
  std::size_t pos = 0;
  bool truncated = false;
  char message[200] = {};
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::strncpy(in->message, message, sizeof(in->message) - 1);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}  // library code prints nothing

void read_png_bytes(png_structp png, png_bytep out, size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->bytes.size() - in->pos) {
    in->truncated = true;
    png_error(png, "unexpected end of data");
  }
  std::memcpy(out, in->bytes.data() + in->pos, n);
  in->pos += n;
}

// Owns the libpng handles; constructed before setjmp so that a longjmp never skips it.
struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngState() {
    if (png != nullptr) png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr);
  }
};

// A chunk type for a message: its four letters, or hex when they are not letters.
std::string printable_chunk_type(const std::string& type) {
  if (std::all_of(type.begin(), type.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); })) return type;
  std::string hex = "0x";
  for (unsigned char c : type) {
    const char* digits = "0123456789abcdef";
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

std::uint32_t be32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// One decoded row (after libpng's expansions) to RGB. `grey16` marks a 16-bit grey image,
// whose samples Pillow clamps to 0..255 rather than shifting.
void row_to_rgb(const std::uint8_t* in, int channels, bool grey16, int width, std::uint8_t* out) {
  if (grey16) {
    for (int x = 0; x < width; ++x, in += 2 * channels) {
      const unsigned v = (unsigned{in[0]} << 8) | in[1];
      out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = static_cast<std::uint8_t>(v > 255 ? 255 : v);
    }
    return;
  }
  for (int x = 0; x < width; ++x, in += channels, out += 3) {
    if (channels <= 2) {
      out[0] = out[1] = out[2] = in[0];
    } else {
      out[0] = in[0];
      out[1] = in[1];
      out[2] = in[2];
    }
  }
}

}  // namespace

RgbImage decode_png(std::span<const std::uint8_t> bytes, const std::string& name, const DecodeOptions& options) {
  // The size check runs on IHDR before libpng sees the file, so a bomb costs nothing.
  if (bytes.size() < 8 + 8 + 13) invalid_file(name + ": truncated PNG (the data ends before the image header)");
  if (std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) invalid_file(name + ": invalid PNG: the first chunk is not IHDR");
  check_image_size(be32(bytes.data() + 16), be32(bytes.data() + 20), name, options);
  // The chunks before the image data, walked here: one that claims more bytes than the file
  // has left (a 2 GB tEXt in a 141-byte file) made libpng allocate that much before it found
  // the end of the data.
  for (std::size_t at = 8; at + 8 <= bytes.size();) {
    const std::uint32_t length = be32(bytes.data() + at);
    const std::string type(reinterpret_cast<const char*>(bytes.data() + at + 4), 4);
    if (type == "IDAT" || type == "IEND") break;
    if (std::uint64_t{length} + 12 > bytes.size() - at) {
      invalid_file(name + ": truncated PNG (chunk " + printable_chunk_type(type) + " declares " + std::to_string(length) +
                   " bytes; " + std::to_string(bytes.size() - at - std::min<std::size_t>(bytes.size() - at, 12)) + " are left)");
    }
    at += std::size_t{length} + 12;
  }

  PngInput input;
  input.bytes = bytes;
  PngState s;
  RgbImage image;
  std::vector<std::uint8_t> buffer;  // decoded rows before the RGB conversion
  std::vector<png_bytep> rows;
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, on_png_error, on_png_warning);
  if (s.png == nullptr) internal_error(name + ": libpng could not allocate a reader");
  s.info = png_create_info_struct(s.png);
  if (s.info == nullptr) internal_error(name + ": libpng could not allocate a reader");
  if (setjmp(png_jmpbuf(s.png))) {
    if (input.truncated) invalid_file(name + ": truncated PNG (the data ends before the image is complete)");
    invalid_file(name + ": invalid PNG: " + input.message);
  }

  png_set_read_fn(s.png, &input, read_png_bytes);
  // Ancillary chunks (text, ICC profiles) are never used: none may make libpng allocate more.
  png_set_chunk_malloc_max(s.png, 8u << 20);
  png_read_info(s.png, s.info);
  const int width = static_cast<int>(png_get_image_width(s.png, s.info));
  const int height = static_cast<int>(png_get_image_height(s.png, s.info));
  const int color_type = png_get_color_type(s.png, s.info);
  const int bit_depth = png_get_bit_depth(s.png, s.info);
  const bool grey16 = color_type == PNG_COLOR_TYPE_GRAY && bit_depth == 16;

  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s.png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(s.png);
  if (bit_depth == 16 && !grey16) png_set_strip_16(s.png);
  const int passes = png_set_interlace_handling(s.png);
  png_read_update_info(s.png, s.info);

  const int channels = png_get_channels(s.png, s.info);
  const std::size_t pixel_bytes = static_cast<std::size_t>(channels) * (grey16 ? 2 : 1);
  const std::size_t row_bytes = static_cast<std::size_t>(width) * pixel_bytes;
  if (channels < 1 || channels > 4 || png_get_rowbytes(s.png, s.info) != row_bytes)
    internal_error(name + ": unexpected PNG row layout after expansion");

  image = RgbImage(width, height);
  if (passes > 1) {
    // Adam7: every pass writes into the whole image, so it is decoded in full first.
    buffer.resize(row_bytes * static_cast<std::size_t>(height));
    rows.resize(static_cast<std::size_t>(height));
    for (int y = 0; y < height; ++y) rows[y] = buffer.data() + row_bytes * static_cast<std::size_t>(y);
    png_read_image(s.png, rows.data());
    for (int y = 0; y < height; ++y) row_to_rgb(rows[y], channels, grey16, width, image.row(y));
  } else {
    buffer.resize(row_bytes);
    for (int y = 0; y < height; ++y) {
      png_read_row(s.png, buffer.data(), nullptr);
      row_to_rgb(buffer.data(), channels, grey16, width, image.row(y));
    }
  }
  // Chunks after the image data (text, IEND) are not read, as Pillow does not need them either.
  return image;
}

}  // namespace staticlm::detail
