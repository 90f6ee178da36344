#include "quant/formats.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/half.h"

namespace staticlm::quant {

namespace {

float max_abs(const float* w, std::int64_t n) {
  float m = 0;
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(w[i]));
  return m;
}

int quantize_value(float w, float inv_scale, int lo, int hi) {
  return std::clamp(static_cast<int>(std::lround(w * inv_scale)), lo, hi);
}

}  // namespace

void quantize_q8(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<std::int8_t> q,
                 std::span<float> scales) {
  if (static_cast<std::int64_t>(w.size()) != rows * cols || static_cast<std::int64_t>(q.size()) != rows * cols ||
      static_cast<std::int64_t>(scales.size()) != rows) {
    internal_error("quantize_q8: buffer sizes do not match [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = w.data() + r * cols;
    const float scale = max_abs(row, cols) / 127.0f;
    scales[r] = scale;
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (std::int64_t c = 0; c < cols; ++c) q[r * cols + c] = static_cast<std::int8_t>(quantize_value(row[c], inv, -127, 127));
  }
}

void quantize_q4(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<std::uint8_t> q,
                 std::span<std::uint16_t> scales) {
  if (cols % kQ4Group != 0) {
    invalid_argument("q4: the input width " + std::to_string(cols) + " is not a multiple of the group size " +
                     std::to_string(kQ4Group));
  }
  const std::int64_t groups = cols / kQ4Group;
  if (static_cast<std::int64_t>(w.size()) != rows * cols || static_cast<std::int64_t>(q.size()) != rows * cols / 2 ||
      static_cast<std::int64_t>(scales.size()) != rows * groups) {
    internal_error("quantize_q4: buffer sizes do not match [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  std::fill(q.begin(), q.end(), std::uint8_t{0});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t g = 0; g < groups; ++g) {
      const float* block = w.data() + r * cols + g * kQ4Group;
      // The scale is stored as f16: quantize against the value that will be read back.
      const std::uint16_t bits = f32_to_f16(max_abs(block, kQ4Group) / 7.0f);
      scales[r * groups + g] = bits;
      const float scale = f16_to_f32(bits);
      const float inv = scale > 0 ? 1.0f / scale : 0.0f;
      std::uint8_t* out = q.data() + r * cols / 2;
      for (std::int64_t i = 0; i < kQ4Group; ++i) {
        const std::int64_t c = g * kQ4Group + i;
        const int v = quantize_value(block[i], inv, -8, 7) & 0xF;
        out[c / 2] = static_cast<std::uint8_t>(out[c / 2] | (v << ((c % 2) * 4)));
      }
    }
  }
}

void dequantize_q8_row(const std::int8_t* q, const float* scales, std::int64_t r, std::int64_t cols, float* out) {
  const float s = scales[r];
  for (std::int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(q[r * cols + c]) * s;
}

void dequantize_q4_row(const std::uint8_t* q, const std::uint16_t* scales, std::int64_t r, std::int64_t cols,
                       float* out) {
  const std::uint8_t* row = q + r * cols / 2;
  const std::uint16_t* s = scales + r * (cols / kQ4Group);
  for (std::int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(q4_value(row, c)) * f16_to_f32(s[c / kQ4Group]);
}

}  // namespace staticlm::quant
