#include "backends/cpu/resident_weights.h"

#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"

namespace staticlm::cpu {
namespace {

constexpr std::size_t kAlign = 64;  // a cache line: the kernels' vector loads never straddle two

std::size_t padded(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Pieces {
  std::size_t values = 0, scales = 0, zero_points = 0;
};

Pieces pieces(const WeightMatrix& m) {
  Pieces p;
  if (m.data == nullptr) return p;
  const auto rows = static_cast<std::size_t>(m.rows), cols = static_cast<std::size_t>(m.cols);
  p.values = dtype_bytes(m.dtype, rows * cols);
  if (!quantized_dtype(m.dtype)) return p;
  const QuantizedScales s = quantized_scales(m.dtype, m.rows, m.cols);
  p.scales = dtype_bytes(s.dtype, static_cast<std::size_t>(s.shape.numel()));
  if (s.has_zero_points) p.zero_points = rows;
  return p;
}

}  // namespace

std::size_t resident_bytes(const WeightMatrix& m) {
  const Pieces p = pieces(m);
  return padded(p.values) + padded(p.scales) + padded(p.zero_points);
}

std::unique_ptr<HugePageBuffer> make_resident(const std::vector<WeightMatrix*>& matrices,
                                              const ReleasedRange& released) {
  std::size_t total = 0;
  for (const WeightMatrix* m : matrices) total += resident_bytes(*m);
  auto buffer = std::make_unique<HugePageBuffer>(total);
  auto* out = static_cast<std::uint8_t*>(buffer->data());
  auto copy = [&](const void* from, std::size_t n) {
    std::memcpy(out, from, n);
    if (released) released(from, n);
    const void* to = out;
    out += padded(n);
    return to;
  };
  for (WeightMatrix* m : matrices) {
    const Pieces p = pieces(*m);
    if (p.values == 0) continue;
    m->data = copy(m->data, p.values);
    if (p.scales > 0) m->scales = copy(m->scales, p.scales);
    if (p.zero_points > 0) m->zero_points = static_cast<const std::uint8_t*>(copy(m->zero_points, p.zero_points));
  }
  return buffer;
}

}  // namespace staticlm::cpu
