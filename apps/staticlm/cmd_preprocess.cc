// staticlm preprocess --image F [--max-soft-tokens N] --out OUT.safetensors [--max-pixels N]
//                     [--grid HxW [--fit-mode strict|fit]]
// Writes the Gemma 4 vision inputs for one image: pixel_values F32 [1, N*9, 768],
// image_position_ids I64 [1, N*9, 2], num_soft_tokens I64 [1].
#include <charconv>
#include <iostream>
#include <string>

#include "base/error.h"
#include "commands.h"
#include "tensor/safetensors.h"
#include "vision/image_decode.h"
#include "vision/image_processor.h"
#include "vision/static_fit.h"

namespace staticlm::cli {

namespace {

// "36x66" -> {36, 66}.
PatchGrid parse_grid(const std::string& s) {
  PatchGrid g;
  const char* end = s.data() + s.size();
  const auto h = std::from_chars(s.data(), end, g.height);
  bool ok = h.ec == std::errc() && h.ptr != end && *h.ptr == 'x';
  if (ok) {
    const auto w = std::from_chars(h.ptr + 1, end, g.width);
    ok = w.ec == std::errc() && w.ptr == end && w.ptr != h.ptr + 1;
  }
  if (!ok) invalid_argument("--grid: \"" + s + "\" is not a patch grid; expected HxW in patches, e.g. 36x66");
  return g;
}

// The same bytes seen with a leading batch dimension of 1.
TensorView batched(const Tensor& t) {
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), t.shape().dims().begin(), t.shape().dims().end());
  return TensorView{t.dtype(), Shape(dims), t.data()};
}

}  // namespace

void add_preprocess_command(CLI::App& app) {
  struct Args {
    std::string image, out, grid, fit_mode = "strict";
    int max_soft_tokens = kDefaultMaxSoftTokens;
    std::int64_t max_pixels = static_cast<std::int64_t>(kDefaultMaxImagePixels);  // signed: -5 is an error, not 2^64 - 5
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("preprocess", "decode an image and write the Gemma 4 vision inputs to a safetensors file");
  cmd->add_option("--image", args->image, "JPEG or PNG file")->required();
  cmd->add_option("--max-soft-tokens", args->max_soft_tokens, "soft-token budget: 70, 140, 280, 560 or 1120")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "output .safetensors file")->required();
  cmd->add_option("--max-pixels", args->max_pixels, "refuse images with more pixels (decompression-bomb guard)")
      ->capture_default_str();
  cmd->add_option("--grid", args->grid, "patch grid HxW of a static profile, e.g. 36x66 (576 x 1056 pixels)");
  cmd->add_option("--fit-mode", args->fit_mode,
                  "with --grid: strict (the image must give that grid) or fit (resize to it, distorting the aspect)")
      ->capture_default_str();
  cmd->callback([args] {
    // Cheap argument checks first, so a bad flag never costs a decode.
    check_max_soft_tokens(args->max_soft_tokens);
    if (args->max_pixels <= 0)
      invalid_argument("--max-pixels: " + std::to_string(args->max_pixels) + " is not a positive pixel count");
    const FitMode mode = parse_fit_mode(args->fit_mode);
    const bool with_grid = !args->grid.empty();
    const PatchGrid grid = with_grid ? parse_grid(args->grid) : PatchGrid{};
    if (with_grid) check_patch_grid(grid, args->max_soft_tokens);

    const RgbImage image = decode_image_file(args->image, DecodeOptions{static_cast<std::uint64_t>(args->max_pixels)});
    const ProcessedImage p = with_grid ? process_image_for_grid(image, grid, mode, args->max_soft_tokens)
                                       : process_image(image, args->max_soft_tokens);
    Tensor count(DType::kI64, Shape{1});
    count.as<std::int64_t>()[0] = p.num_soft_tokens;

    SafetensorsWriter writer;
    writer.add("pixel_values", batched(p.pixel_values));
    writer.add("image_position_ids", batched(p.position_ids));
    writer.add("num_soft_tokens", count.view());
    writer.add_metadata("image_size", std::to_string(image.height) + "x" + std::to_string(image.width));
    writer.add_metadata("patch_grid", std::to_string(p.grid_height) + "x" + std::to_string(p.grid_width));
    writer.add_metadata("max_soft_tokens", std::to_string(args->max_soft_tokens));
    writer.write(args->out);
    std::cout << "wrote " << args->out << ": image " << image.height << " x " << image.width << " (H x W) -> "
              << p.grid_height * kPatchSize << " x " << p.grid_width * kPatchSize << ", patch grid " << p.grid_height
              << " x " << p.grid_width << ", " << p.num_soft_tokens << " soft tokens\n";
  });
}

}  // namespace staticlm::cli
