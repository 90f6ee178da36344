// Image preprocessing time for a 12-megapixel JPEG (4000 x 3000, 4:2:0, quality 90), generated
// at startup with libjpeg so nothing large is committed. Stages: decode, resize to the 280-token
// target (912 x 672), patchify, and the whole preprocess as `staticlm preprocess` runs it.
//   build/bench_preprocess [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <jpeglib.h>

#include "vision/image_decode.h"
#include "vision/image_processor.h"
#include "vision/resize.h"

namespace staticlm {
namespace {

constexpr int kWidth = 4000, kHeight = 3000;

// Photo-like content: smooth gradients, a few discs and grain, so the JPEG has real entropy.
std::vector<std::uint8_t> make_pixels() {
  std::vector<std::uint8_t> px(static_cast<std::size_t>(kWidth) * kHeight * 3);
  std::mt19937 rng(1);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      const double d = std::hypot(x - 1800.0, y - 1400.0);
      const int disc = d < 700 ? 60 : 0;
      std::uint8_t* p = &px[(static_cast<std::size_t>(y) * kWidth + x) * 3];
      const int grain = static_cast<int>(rng() % 17) - 8;
      p[0] = static_cast<std::uint8_t>(std::clamp(x * 200 / kWidth + disc + grain, 0, 255));
      p[1] = static_cast<std::uint8_t>(std::clamp(y * 180 / kHeight + grain + static_cast<int>(40 * std::sin(x / 90.0)), 0, 255));
      p[2] = static_cast<std::uint8_t>(std::clamp(120 + disc - grain + static_cast<int>(50 * std::cos(y / 70.0)), 0, 255));
    }
  return px;
}

std::vector<std::uint8_t> encode_jpeg(const std::vector<std::uint8_t>& px) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = kWidth;
  c.image_height = kHeight;
  c.input_components = 3;
  c.in_color_space = JCS_RGB;
  jpeg_set_defaults(&c);  // 4:2:0
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<std::uint8_t*>(&px[static_cast<std::size_t>(c.next_scanline) * kWidth * 3]);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<std::uint8_t> bytes(out, out + size);
  jpeg_destroy_compress(&c);
  std::free(out);
  return bytes;
}

const std::vector<std::uint8_t>& jpeg_12mp() {
  static const std::vector<std::uint8_t> bytes = encode_jpeg(make_pixels());
  return bytes;
}

const RgbImage& decoded_12mp() {
  static const RgbImage image = decode_image(jpeg_12mp(), "bench.jpg");
  return image;
}

void BM_Decode12MP(benchmark::State& state) {
  const auto& bytes = jpeg_12mp();
  for (auto _ : state) benchmark::DoNotOptimize(decode_image(bytes, "bench.jpg").pixels.data());
  state.counters["jpeg_MB"] = bytes.size() / 1e6;
}

void BM_Resize12MPTo912x672(benchmark::State& state) {
  const RgbImage& img = decoded_12mp();
  const ImageSize t = gemma4_target_size(img.height, img.width, 280);
  for (auto _ : state) benchmark::DoNotOptimize(resize_bicubic(img, t.width, t.height).pixels.data());
}

void BM_Patchify912x672(benchmark::State& state) {
  const RgbImage small = resize_bicubic(decoded_12mp(), 912, 672);
  for (auto _ : state) benchmark::DoNotOptimize(patchify_image(small, 280).pixel_values.data());
}

void BM_Preprocess12MP(benchmark::State& state) {
  const auto& bytes = jpeg_12mp();
  for (auto _ : state) {
    const ProcessedImage p = process_image(decode_image(bytes, "bench.jpg"), 280);
    benchmark::DoNotOptimize(p.pixel_values.data());
  }
}

BENCHMARK(BM_Decode12MP)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Resize12MPTo912x672)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Patchify912x672)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Preprocess12MP)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace staticlm

BENCHMARK_MAIN();
