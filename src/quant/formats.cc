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

bool known_scheme(std::string_view scheme) { return scheme == "q8" || scheme == "q4" || scheme == "npu-w4"; }

void check_u4_zero_points(const std::uint8_t* zero_points, std::int64_t rows, const std::string& what) {
  for (std::int64_t i = 0; i < rows; ++i) {
    if (zero_points[i] > 15) {
      invalid_file(what + ": row " + std::to_string(i) + " holds " + std::to_string(zero_points[i]) +
                   ", expected 0..15 for U4 values");
    }
  }
}

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

void quantize_asym(std::span<const float> w, std::int64_t rows, std::int64_t cols, int bits,
                   std::span<std::uint8_t> q, std::span<float> scales, std::span<std::uint8_t> zero_points) {
  const bool packed = bits == 4;
  if ((bits != 4 && bits != 8) || (packed && cols % 2 != 0)) {
    internal_error("quantize_asym: " + std::to_string(bits) + " bits on width " + std::to_string(cols));
  }
  const std::int64_t row_bytes = packed ? cols / 2 : cols;
  if (static_cast<std::int64_t>(w.size()) != rows * cols || static_cast<std::int64_t>(q.size()) != rows * row_bytes ||
      static_cast<std::int64_t>(scales.size()) != rows || static_cast<std::int64_t>(zero_points.size()) != rows) {
    internal_error("quantize_asym: buffer sizes do not match [" + std::to_string(rows) + ", " + std::to_string(cols) + "]");
  }
  const int top = (1 << bits) - 1;
  std::fill(q.begin(), q.end(), std::uint8_t{0});
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = w.data() + r * cols;
    float lo = 0, hi = 0;  // the range always holds 0, so zero weights stay exact
    for (std::int64_t c = 0; c < cols; ++c) {
      lo = std::min(lo, row[c]);
      hi = std::max(hi, row[c]);
    }
    const float scale = (hi - lo) / static_cast<float>(top);
    const int zero = scale > 0 ? std::clamp(static_cast<int>(std::lround(-lo / scale)), 0, top) : 0;
    scales[r] = scale;
    zero_points[r] = static_cast<std::uint8_t>(zero);
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    std::uint8_t* out = q.data() + r * row_bytes;
    for (std::int64_t c = 0; c < cols; ++c) {
      const int u = std::clamp(static_cast<int>(std::lround(row[c] * inv)) + zero, 0, top);
      if (packed) {
        out[c / 2] = static_cast<std::uint8_t>(out[c / 2] | (u << ((c % 2) * 4)));
      } else {
        out[c] = static_cast<std::uint8_t>(u);
      }
    }
  }
}

void dequantize_asym_row(const std::uint8_t* q, int bits, const float* scales, const std::uint8_t* zero_points,
                         std::int64_t r, std::int64_t cols, float* out) {
  dequantize_range(bits == 4 ? DType::kU4 : DType::kU8, q, scales, zero_points, cols, r, 0, cols, out);
}

void dequantize_range(DType t, const void* values, const void* scales, const std::uint8_t* zero_points,
                      std::int64_t cols, std::int64_t r, std::int64_t c0, std::int64_t c1, float* out) {
  switch (t) {
    case DType::kI8: {
      const auto* row = static_cast<const std::int8_t*>(values) + r * cols;
      const float s = static_cast<const float*>(scales)[r];
      for (std::int64_t c = c0; c < c1; ++c) out[c - c0] = static_cast<float>(row[c]) * s;
      return;
    }
    case DType::kI4: {
      const auto* row = static_cast<const std::uint8_t*>(values) + r * (cols / 2);
      const auto* s = static_cast<const std::uint16_t*>(scales) + r * (cols / kQ4Group);
      // Group by group: one f16 conversion per 32 values (per value, it was most of the time
      // of the per-layer embedding's 8960-wide row lookup in every decode step).
      for (std::int64_t c = c0; c < c1;) {
        const std::int64_t end = std::min(c1, (c / kQ4Group + 1) * kQ4Group);
        const float scale = f16_to_f32(s[c / kQ4Group]);
        for (; c < end; ++c) out[c - c0] = static_cast<float>(q4_value(row, c)) * scale;
      }
      return;
    }
    case DType::kU4:
    case DType::kU8: {
      const bool packed = t == DType::kU4;
      const auto* row = static_cast<const std::uint8_t*>(values) + r * (packed ? cols / 2 : cols);
      const float s = static_cast<const float*>(scales)[r];
      const int z = zero_points[r];
      for (std::int64_t c = c0; c < c1; ++c) out[c - c0] = static_cast<float>((packed ? u4_value(row, c) : row[c]) - z) * s;
      return;
    }
    default:
      internal_error(std::string("dequantize_range: dtype ") + dtype_name(t) + " is not quantized");
  }
}

void dequantize_q8_row(const std::int8_t* q, const float* scales, std::int64_t r, std::int64_t cols, float* out) {
  dequantize_range(DType::kI8, q, scales, nullptr, cols, r, 0, cols, out);
}

void dequantize_q4_row(const std::uint8_t* q, const std::uint16_t* scales, std::int64_t r, std::int64_t cols,
                       float* out) {
  dequantize_range(DType::kI4, q, scales, nullptr, cols, r, 0, cols, out);
}

}  // namespace staticlm::quant
