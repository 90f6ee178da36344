// How the decode GEMVs walk their output rows: a thread's rows [j0, j1) are cut in kStreamRows
// equal parts and row i of every part is read together. The activation loads then serve
// kStreamRows rows, and the rows are kStreamRows sequential streams far apart, which the
// hardware prefetchers follow (adjacent rows read by turns were not: half the speed from
// memory). Used by the Highway GEMV (gemm.cc) and the VNNI GEMV (gemv_vnni.cc).
#pragma once

#include <cstdint>
#include <type_traits>

namespace staticlm::cpu {

inline constexpr int kStreamRows = 4;

// rows(j, part, n) computes the n rows j, j + part, ..., with n = kStreamRows (an
// std::integral_constant), then n = 1 (part 0) for each row left over.
template <typename Rows>
void in_streams(std::int64_t j0, std::int64_t j1, Rows rows) {
  const std::int64_t part = (j1 - j0) / kStreamRows;
  for (std::int64_t i = 0; i < part; ++i) rows(j0 + i, part, std::integral_constant<int, kStreamRows>{});
  for (std::int64_t j = j0 + part * kStreamRows; j < j1; ++j) rows(j, std::int64_t{0}, std::integral_constant<int, 1>{});
}

}  // namespace staticlm::cpu
