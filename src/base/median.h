// The median of a sample: the middle value, or the mean of the middle two for an even count.
#pragma once

#include <algorithm>
#include <vector>

namespace staticlm {

// Sorts `v` (taken by value); 0 for an empty sample.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace staticlm
