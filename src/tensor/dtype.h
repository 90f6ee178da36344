// Element types. Names follow safetensors ("F32", "BF16", ...). I4 and U4 are packed 4-bit
// signed / unsigned types, two values per byte (low nibble first), for quantized weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace staticlm {

enum class DType : std::uint8_t { kF32, kF16, kBF16, kI8, kU8, kI32, kI64, kBool, kI4, kU4 };

// Bits per element (4 for I4 and U4).
int dtype_bits(DType t);

// Bytes for n elements (rounded up for packed types).
std::size_t dtype_bytes(DType t, std::size_t n);

// "F32", "F16", "BF16", "I8", "U8", "I32", "I64", "BOOL", "I4", "U4".
const char* dtype_name(DType t);

// Parses a safetensors dtype name; nullopt for a name this runtime does not know.
std::optional<DType> dtype_from_name(std::string_view name);

bool dtype_is_float(DType t);

}  // namespace staticlm
