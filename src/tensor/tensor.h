// TensorView borrows memory (a weight inside a memory-mapped file, a caller's buffer);
// Tensor owns its bytes. A deep copy is an explicit Tensor::copy_of(view), so its cost shows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace staticlm {

struct TensorView {
  DType dtype = DType::kF32;
  Shape shape;
  const void* data = nullptr;  // not owned

  std::int64_t numel() const { return shape.numel(); }
  std::size_t nbytes() const { return dtype_bytes(dtype, static_cast<std::size_t>(numel())); }
  std::span<const std::uint8_t> bytes() const { return {static_cast<const std::uint8_t*>(data), nbytes()}; }

  // Typed access; throws kInvalidArgument when T does not match dtype, or when data is not
  // aligned for T (possible for a view into a safetensors file).
  template <typename T>
  std::span<const T> as() const;

  // Element i converted to f32 (float dtypes and integer dtypes; not I4).
  float get_f32(std::int64_t i) const;
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor.
  Tensor(DType dtype, Shape shape);
  static Tensor copy_of(const TensorView& v);
  // f32 values converted to dtype (F32, F16 or BF16) with round-to-nearest-even.
  static Tensor from_f32(DType dtype, Shape shape, std::span<const float> values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t nbytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  TensorView view() const { return {dtype_, shape_, bytes_.data()}; }

  template <typename T>
  std::span<T> as();
  template <typename T>
  std::span<const T> as() const { return view().as<T>(); }

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::vector<std::uint8_t> bytes_;
};

// The C++ type that stores one element of a dtype (uint16_t for F16/BF16).
template <typename T>
bool dtype_matches(DType t);

}  // namespace staticlm
