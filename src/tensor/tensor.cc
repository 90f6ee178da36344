#include "tensor/tensor.h"

#include <cstring>

#include "base/error.h"
#include "base/half.h"

namespace staticlm {

template <typename T>
bool dtype_matches(DType t) {
  if constexpr (std::is_same_v<T, float>) return t == DType::kF32;
  if constexpr (std::is_same_v<T, std::uint16_t>) return t == DType::kF16 || t == DType::kBF16;
  if constexpr (std::is_same_v<T, std::int8_t>) return t == DType::kI8;
  if constexpr (std::is_same_v<T, std::uint8_t>) return t == DType::kU8 || t == DType::kBool || t == DType::kI4 || t == DType::kU4;
  if constexpr (std::is_same_v<T, std::int32_t>) return t == DType::kI32;
  if constexpr (std::is_same_v<T, std::int64_t>) return t == DType::kI64;
  return false;
}

template <typename T>
std::span<const T> TensorView::as() const {
  if (!dtype_matches<T>(dtype)) invalid_argument(std::string("tensor of dtype ") + dtype_name(dtype) + " read as another type");
  // A safetensors file only aligns its data start: a tensor after one of odd size can sit at any
  // address, and reading it through a T* would be undefined behaviour.
  if (reinterpret_cast<std::uintptr_t>(data) % alignof(T) != 0)
    invalid_argument(std::string("tensor of dtype ") + dtype_name(dtype) + " is not " + std::to_string(alignof(T)) +
                     "-byte aligned for typed access; read it with get_f32() or Tensor::copy_of()");
  const std::size_t n = dtype == DType::kI4 || dtype == DType::kU4 ? nbytes() : static_cast<std::size_t>(numel());
  return {static_cast<const T*>(data), n};
}

template <typename T>
std::span<T> Tensor::as() {
  auto c = view().as<T>();
  return {const_cast<T*>(c.data()), c.size()};
}

#define STATICLM_INSTANTIATE(T)                                     \
  template bool dtype_matches<T>(DType);                            \
  template std::span<const T> TensorView::as<T>() const;            \
  template std::span<T> Tensor::as<T>();
STATICLM_INSTANTIATE(float)
STATICLM_INSTANTIATE(std::uint16_t)
STATICLM_INSTANTIATE(std::int8_t)
STATICLM_INSTANTIATE(std::uint8_t)
STATICLM_INSTANTIATE(std::int32_t)
STATICLM_INSTANTIATE(std::int64_t)
#undef STATICLM_INSTANTIATE

float TensorView::get_f32(std::int64_t i) const {
  const auto* p = static_cast<const std::uint8_t*>(data);
  switch (dtype) {
    case DType::kF32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::kF16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return f16_to_f32(v); }
    case DType::kBF16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return bf16_to_f32(v); }
    case DType::kI8: return static_cast<float>(static_cast<std::int8_t>(p[i]));
    case DType::kU8:
    case DType::kBool: return static_cast<float>(p[i]);
    case DType::kI32: { std::int32_t v; std::memcpy(&v, p + 4 * i, 4); return static_cast<float>(v); }
    case DType::kI64: { std::int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<float>(v); }
    case DType::kI4:
    case DType::kU4: break;
  }
  unsupported(std::string("get_f32 on dtype ") + dtype_name(dtype));
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(dtype_bytes(dtype_, static_cast<std::size_t>(shape_.numel())), 0) {}

Tensor Tensor::copy_of(const TensorView& v) {
  Tensor t(v.dtype, v.shape);
  if (t.nbytes()) std::memcpy(t.data(), v.data, t.nbytes());
  return t;
}

Tensor Tensor::from_f32(DType dtype, Shape shape, std::span<const float> values) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<std::int64_t>(values.size()) != t.numel())
    invalid_argument("from_f32: " + std::to_string(values.size()) + " values for shape " + t.shape().to_string());
  switch (dtype) {
    case DType::kF32: std::memcpy(t.data(), values.data(), t.nbytes()); break;
    case DType::kBF16: {
      auto out = t.as<std::uint16_t>();
      for (std::size_t i = 0; i < values.size(); ++i) out[i] = f32_to_bf16(values[i]);
      break;
    }
    case DType::kF16: {
      auto out = t.as<std::uint16_t>();
      for (std::size_t i = 0; i < values.size(); ++i) out[i] = f32_to_f16(values[i]);
      break;
    }
    default: invalid_argument(std::string("from_f32: dtype ") + dtype_name(dtype) + " is not a float type");
  }
  return t;
}

}  // namespace staticlm
