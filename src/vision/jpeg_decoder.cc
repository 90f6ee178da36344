// JPEG through libjpeg-turbo with its default settings (ISLOW IDCT, fancy upsampling), the
// settings Pillow's decoder uses, so the decoded pixels are Pillow's.
//
// libjpeg reports errors through a callback that must not return: it longjmps back to
// decode_jpeg. Everything alive in decode_jpeg at that point was constructed before setjmp, so
// the jump skips no destructor; the state that owns the libjpeg handle is destroyed normally when
// the resulting exception unwinds.
#include <csetjmp>
#include <cstddef>
#include <cstdio>  // jpeglib.h needs FILE
#include <string>
#include <vector>

#include <jpeglib.h>
#include <jerror.h>

#include "base/error.h"
#include "vision/decoders.h"

namespace staticlm::detail {

namespace {

struct JpegErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg hands us &pub as cinfo->err
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  int code;
};

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  err->code = err->pub.msg_code;
  err->pub.format_message(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (level -1) about corrupt entropy data are tolerated, as Pillow tolerates them; running
// out of data is not (Pillow: "image file is truncated"). Trace messages (level >= 0) are dropped.
void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_jpeg_error(cinfo);
}

// A progressive JPEG may repeat scans without end: each one is decoded over the whole image
// (a 670 KB file of 3000 scans of a 13000 x 13000 image took 49 s and 1 GB). Encoders write
// about 10 (jpegtran, mozjpeg, Pillow); libjpeg-turbo's tools take a scan limit for untrusted
// files, as here.
constexpr int kMaxJpegScans = 100;
constexpr int kTooManyScans = -1;  // our error code, beside libjpeg's (all >= 0)

void on_jpeg_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number <= kMaxJpegScans) return;
  auto* err = reinterpret_cast<JpegErrorManager*>(cinfo->err);
  err->code = kTooManyScans;
  std::longjmp(err->jump, 1);
}

// Owns the libjpeg handle; constructed before setjmp so that a longjmp never skips it.
struct JpegState {
  jpeg_decompress_struct cinfo{};
  JpegErrorManager err{};
  jpeg_progress_mgr progress{};
  volatile bool created = false;
  ~JpegState() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

[[noreturn]] void throw_jpeg_error(const std::string& name, const JpegErrorManager& err) {
  if (err.code == kTooManyScans) {
    invalid_file(name + ": a progressive JPEG of more than " + std::to_string(kMaxJpegScans) +
                 " scans (the limit; encoders write about 10)");
  }
  if (err.code == JWRN_JPEG_EOF || err.code == JERR_INPUT_EOF)
    invalid_file(name + ": truncated JPEG (the data ends before the image is complete)");
  if (err.code == JERR_EMPTY_IMAGE) invalid_file(name + ": image has zero width or height");
  invalid_file(name + ": invalid JPEG: " + err.message);
}

// Pillow's "CMYK;I" unpacking (Adobe files store inverted inks) followed by its cmyk2rgb:
// out = nk - round(c * nk / 255) with nk = 255 - k, the rounding done as Pillow's MULDIV255.
inline std::uint8_t cmyk_channel(std::uint8_t stored_c, std::uint8_t stored_k) {
  const int c = 255 - stored_c, nk = stored_k;  // 255 - (255 - stored_k)
  const int t = c * nk + 128;
  const int v = nk - (((t >> 8) + t) >> 8);
  return static_cast<std::uint8_t>(v < 0 ? 0 : v);
}

}  // namespace

RgbImage decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& name, const DecodeOptions& options) {
  JpegState s;
  RgbImage image;
  std::vector<std::uint8_t> row;  // one scanline for grey and CMYK output
  s.cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.pub.error_exit = on_jpeg_error;
  s.err.pub.emit_message = on_jpeg_message;
  if (setjmp(s.err.jump)) throw_jpeg_error(name, s.err);

  jpeg_create_decompress(&s.cinfo);
  s.created = true;
  s.progress.progress_monitor = on_jpeg_progress;
  s.cinfo.progress = &s.progress;
  jpeg_mem_src(&s.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&s.cinfo, TRUE);
  check_image_size(s.cinfo.image_width, s.cinfo.image_height, name, options);

  const int components = s.cinfo.num_components;
  if (components == 1) {
    s.cinfo.out_color_space = JCS_GRAYSCALE;
  } else if (components == 3) {
    s.cinfo.out_color_space = JCS_RGB;
  } else if (components == 4) {
    s.cinfo.out_color_space = JCS_CMYK;
  } else {
    unsupported(name + ": JPEG with " + std::to_string(components) + " components; expected 1, 3 or 4");
  }
  jpeg_start_decompress(&s.cinfo);
  const int w = static_cast<int>(s.cinfo.output_width), h = static_cast<int>(s.cinfo.output_height);
  image = RgbImage(w, h);
  if (components != 3) row.resize(static_cast<std::size_t>(w) * static_cast<std::size_t>(components));

  while (s.cinfo.output_scanline < s.cinfo.output_height) {
    const int y = static_cast<int>(s.cinfo.output_scanline);
    std::uint8_t* out = image.row(y);
    JSAMPROW target = components == 3 ? out : row.data();
    if (jpeg_read_scanlines(&s.cinfo, &target, 1) != 1) invalid_file(name + ": truncated JPEG");
    if (components == 1) {
      for (int x = 0; x < w; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = row[x];
    } else if (components == 4) {
      for (int x = 0; x < w; ++x) {
        const std::uint8_t* p = &row[4 * static_cast<std::size_t>(x)];
        for (int c = 0; c < 3; ++c) out[3 * x + c] = cmyk_channel(p[c], p[3]);
      }
    }
  }
  // All rows are in; what follows the last scan (EOI, trailing bytes) is not read, as in Pillow.
  return image;
}

}  // namespace staticlm::detail
