#include "backends/cpu/weight_loading.h"

#include "base/error.h"

namespace staticlm::cpu {

std::vector<float> weight_vector_f32(const WeightGetter& get, const std::string& name, std::int64_t n) {
  const TensorView v = get(name);
  if (!dtype_is_float(v.dtype) || v.numel() != n || v.shape.rank() > 1) {
    invalid_file("weight " + name + ": " + dtype_name(v.dtype) + " " + v.shape.to_string() + ", expected a float [" +
                 std::to_string(n) + "]");
  }
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = v.get_f32(i);
  return out;
}

WeightMatrix aligned_weight_matrix(TensorView view, const std::string& name, std::int64_t rows, std::int64_t cols,
                                   std::vector<std::unique_ptr<Tensor>>& copies) {
  const auto align = static_cast<std::uintptr_t>(dtype_bytes(view.dtype, 1));
  if (align > 1 && reinterpret_cast<std::uintptr_t>(view.data) % align != 0) {
    copies.push_back(std::make_unique<Tensor>(Tensor::copy_of(view)));
    view = copies.back()->view();
  }
  return weight_matrix(view, name, rows, cols);
}

WeightMatrix load_weight_matrix(const WeightGetter& get, TensorView view, const std::string& name, std::int64_t rows,
                                std::int64_t cols, std::vector<std::unique_ptr<Tensor>>& copies) {
  if (!quantized_dtype(view.dtype)) return aligned_weight_matrix(view, name, rows, cols, copies);
  TensorView scales = get(name + "_scale");
  const auto align = static_cast<std::uintptr_t>(dtype_bytes(scales.dtype, 1));
  if (align > 1 && reinterpret_cast<std::uintptr_t>(scales.data) % align != 0) {
    copies.push_back(std::make_unique<Tensor>(Tensor::copy_of(scales)));
    scales = copies.back()->view();
  }
  if (view.dtype == DType::kU4 || view.dtype == DType::kU8) {
    const TensorView zero_points = get(name + "_zero_point");
    return quantized_weight_matrix(view, scales, name, rows, cols, &zero_points);
  }
  return quantized_weight_matrix(view, scales, name, rows, cols);
}

}  // namespace staticlm::cpu
