#include "runtime/rope.h"

#include <cmath>

#include "base/error.h"

namespace staticlm {

std::vector<float> rope_inv_freq(double theta, std::int64_t head_dim, std::int64_t rotary_dims) {
  if (head_dim < 2 || head_dim % 2 != 0) {
    invalid_argument("rope: head_dim " + std::to_string(head_dim) + " must be even and positive");
  }
  if (rotary_dims < 0 || rotary_dims > head_dim || rotary_dims % 2 != 0) {
    invalid_argument("rope: rotary_dims " + std::to_string(rotary_dims) + " must be even and within [0, " +
                     std::to_string(head_dim) + "]");
  }
  std::vector<float> inv(static_cast<std::size_t>(head_dim / 2), 0.0f);
  for (std::int64_t i = 0; i < rotary_dims / 2; ++i) {
    // Upstream: exponent in float32, base ** exponent in float32, then 1 / that.
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    const float power = static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
    inv[static_cast<std::size_t>(i)] = 1.0f / power;
  }
  return inv;
}

void build_rope_table(std::span<const float> inv_freq, std::int64_t first_position, std::int64_t count,
                      RopeSine sine, std::span<float> cos, std::span<float> sin) {
  const std::size_t half = inv_freq.size();
  const std::size_t hd = 2 * half;
  const std::size_t need = static_cast<std::size_t>(count) * hd;
  if (count < 0 || cos.size() != need || sin.size() != need) {
    invalid_argument("rope: cos/sin buffers of " + std::to_string(cos.size()) + "/" + std::to_string(sin.size()) +
                     " floats, expected " + std::to_string(count) + " x " + std::to_string(hd));
  }
  const float sign = sine == RopeSine::kPreNegatedSin ? -1.0f : 1.0f;
  for (std::int64_t p = 0; p < count; ++p) {
    const float pos = static_cast<float>(first_position + p);
    float* c = cos.data() + static_cast<std::size_t>(p) * hd;
    float* s = sin.data() + static_cast<std::size_t>(p) * hd;
    for (std::size_t i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];  // float32 product, as upstream
      const float ca = static_cast<float>(std::cos(static_cast<double>(angle)));
      const float sa = static_cast<float>(std::sin(static_cast<double>(angle)));
      c[i] = ca;
      c[half + i] = ca;
      s[i] = sign * sa;
      s[half + i] = sa;
    }
  }
}

RopeTableMap distinct_rope_tables(const std::vector<std::vector<float>>& inv_freq, const std::vector<LayerInfo>& layers) {
  RopeTableMap m;
  m.table_of.assign(layers.size(), 0);
  for (const LayerInfo& l : layers) {
    std::size_t t = 0;
    while (t < m.first_layer.size() && inv_freq[static_cast<std::size_t>(m.first_layer[t])] != inv_freq[l.index]) ++t;
    if (t == m.first_layer.size()) m.first_layer.push_back(l.index);
    m.table_of[l.index] = t;
  }
  return m;
}

}  // namespace staticlm

