#include "tensor/dtype.h"

namespace staticlm {

int dtype_bits(DType t) {
  switch (t) {
    case DType::kF32: return 32;
    case DType::kF16: return 16;
    case DType::kBF16: return 16;
    case DType::kI8: return 8;
    case DType::kU8: return 8;
    case DType::kI32: return 32;
    case DType::kI64: return 64;
    case DType::kBool: return 8;
    case DType::kI4: return 4;
    case DType::kU4: return 4;
  }
  return 0;
}

std::size_t dtype_bytes(DType t, std::size_t n) { return (n * static_cast<std::size_t>(dtype_bits(t)) + 7) / 8; }

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kI32: return "I32";
    case DType::kI64: return "I64";
    case DType::kBool: return "BOOL";
    case DType::kI4: return "I4";
    case DType::kU4: return "U4";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64,
                  DType::kBool, DType::kI4, DType::kU4}) {
    if (name == dtype_name(t)) return t;
  }
  return std::nullopt;
}

bool dtype_is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

}  // namespace staticlm
