// The quantized weight formats of `staticlm quantize` (issue 11), as layouts plus the rules to
// read them. A quantized nn.Linear weight [rows, cols] is stored as:
//   q8: values I8 [rows, cols], symmetric: w = q * scale[row]; scales F32 [rows].
//   q4: values I4 [rows, cols] (two per byte, low nibble first: element 2i in the low nibble),
//       symmetric in groups of kQ4Group along cols: w = q * scale[row][col / kQ4Group];
//       scales F16 [rows, cols / kQ4Group]; cols must be a multiple of kQ4Group.
// Quantizers round to nearest (ties away from zero), clamp to [-127, 127] (q8) or [-8, 7] (q4),
// and use scale = max|w| / 127 (q8) or max|w| / 7 (q4; -8 is never produced, so the format is
// symmetric), 0 for an all-zero row or group.
#pragma once

#include <cstdint>
#include <span>

namespace staticlm::quant {

inline constexpr std::int64_t kQ4Group = 32;

// w [rows, cols] f32 -> q [rows, cols], scales [rows].
void quantize_q8(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<std::int8_t> q,
                 std::span<float> scales);
// w [rows, cols] f32 -> q [rows, cols / 2] bytes, scales [rows, cols / kQ4Group] as f16 bits.
void quantize_q4(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<std::uint8_t> q,
                 std::span<std::uint16_t> scales);

// Row r dequantized: out[cols].
void dequantize_q8_row(const std::int8_t* q, const float* scales, std::int64_t r, std::int64_t cols, float* out);
void dequantize_q4_row(const std::uint8_t* q, const std::uint16_t* scales, std::int64_t r, std::int64_t cols,
                       float* out);

// The signed value of element i of a q4 row (-8..7).
inline int q4_value(const std::uint8_t* row, std::int64_t i) {
  const int nibble = (row[i / 2] >> ((i % 2) * 4)) & 0xF;
  return (nibble ^ 8) - 8;
}

}  // namespace staticlm::quant
