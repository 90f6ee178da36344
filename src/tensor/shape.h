// Tensor shapes: a short list of non-negative extents.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace staticlm {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }
  const std::vector<std::int64_t>& dims() const { return dims_; }

  // Product of the extents (1 for rank 0).
  std::int64_t numel() const;

  // "[1, 2520, 768]".
  std::string to_string() const;

  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  std::vector<std::int64_t> dims_;
};

}  // namespace staticlm
