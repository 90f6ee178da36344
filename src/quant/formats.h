// The quantized weight formats of `staticlm quantize` (issue 11), as layouts plus the rules to
// read them. A quantized nn.Linear weight [rows, cols] is stored as:
//   q8: values I8 [rows, cols], symmetric: w = q * scale[row]; scales F32 [rows].
//   q4: values I4 [rows, cols] (two per byte, low nibble first: element 2i in the low nibble),
//       symmetric in groups of kQ4Group along cols: w = q * scale[row][col / kQ4Group];
//       scales F16 [rows, cols / kQ4Group]; cols must be a multiple of kQ4Group.
//   npu-w4 (the NPU recipe): values U4 [rows, cols] (packed as I4) for linear layers, or U8
//       [rows, cols] for embedding tables, asymmetric per row: w = scale[row] * (u - zero_point[row]);
//       scales F32 [rows], zero points U8 [rows] (0..15 for U4, 0..255 for U8).
// Quantizers round to nearest (ties away from zero), clamp to [-127, 127] (q8) or [-8, 7] (q4),
// and use scale = max|w| / 127 (q8) or max|w| / 7 (q4; -8 is never produced, so the format is
// symmetric), 0 for an all-zero row or group. The asymmetric quantizer widens each row's range to
// include 0 (so 0 is exact), takes scale = (max - min) / (2^bits - 1) and zero_point =
// round(-min / scale).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tensor/dtype.h"

namespace staticlm::quant {

inline constexpr std::int64_t kQ4Group = 32;

// The schemes `staticlm quantize` writes: "q8", "q4", "npu-w4".
bool known_scheme(std::string_view scheme);

// U4 zero points must be 4-bit values: kInvalidFile "WHAT: row i holds v, expected 0..15 for U4
// values" for the first that is not.
void check_u4_zero_points(const std::uint8_t* zero_points, std::int64_t rows, const std::string& what);

// w [rows, cols] f32 -> q [rows, cols], scales [rows].
void quantize_q8(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<std::int8_t> q,
                 std::span<float> scales);
// w [rows, cols] f32 -> q [rows, cols / 2] bytes, scales [rows, cols / kQ4Group] as f16 bits.
void quantize_q4(std::span<const float> w, std::int64_t rows, std::int64_t cols, std::span<std::uint8_t> q,
                 std::span<std::uint16_t> scales);

// w [rows, cols] f32 -> asymmetric per-row values (bits 4: U4 packed [rows, cols / 2] bytes, cols
// even; bits 8: U8 [rows, cols]), scales [rows], zero points [rows].
void quantize_asym(std::span<const float> w, std::int64_t rows, std::int64_t cols, int bits,
                   std::span<std::uint8_t> q, std::span<float> scales, std::span<std::uint8_t> zero_points);

// Row r dequantized: out[cols].
void dequantize_q8_row(const std::int8_t* q, const float* scales, std::int64_t r, std::int64_t cols, float* out);
void dequantize_q4_row(const std::uint8_t* q, const std::uint16_t* scales, std::int64_t r, std::int64_t cols,
                       float* out);

// bits 4 (U4) or 8 (U8).
void dequantize_asym_row(const std::uint8_t* q, int bits, const float* scales, const std::uint8_t* zero_points,
                         std::int64_t r, std::int64_t cols, float* out);

// Elements [c0, c1) of row r of a quantized matrix of dtype `t` (I8, I4, U4, U8; tensor/dtype.h)
// with `cols` columns, dequantized: out[c1 - c0]. `zero_points` only for U4 / U8.
void dequantize_range(DType t, const void* values, const void* scales, const std::uint8_t* zero_points,
                      std::int64_t cols, std::int64_t r, std::int64_t c0, std::int64_t c1, float* out);

// The unsigned value of element i of a U4 row (0..15).
inline int u4_value(const std::uint8_t* row, std::int64_t i) { return (row[i / 2] >> ((i % 2) * 4)) & 0xF; }

// The signed value of element i of a q4 row (-8..7).
inline int q4_value(const std::uint8_t* row, std::int64_t i) {
  const int nibble = (row[i / 2] >> ((i % 2) * 4)) & 0xF;
  return (nibble ^ 8) - 8;
}

}  // namespace staticlm::quant
