// JPEG and PNG decoding (format sniffed from the bytes), then the Gemma 4 preprocessing of a
// decoded image, both as Hugging Face does it and fitted to a static profile's grid.
#include "fuzz_util.h"
#include "vision/image_decode.h"
#include "vision/image_processor.h"
#include "vision/static_fit.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  fuzz::refuse_or_accept([&] {
    DecodeOptions o;
    o.max_pixels = 4 << 20;  // the fuzzer's memory limit, not the CLI's
    const RgbImage img = decode_image(std::span(data, size), "fuzz", o);
    process_image(img, 70);
    process_image_for_grid(img, PatchGrid{6, 9}, FitMode::kFit, 70);
  });
  return 0;
}
