#include "base/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace staticlm {

double measure_read_bandwidth(ThreadPool& pool, std::size_t bytes, int reps) {
  const std::size_t n = std::max<std::size_t>(bytes, std::size_t{64} << 20) / sizeof(std::uint64_t);
  std::vector<std::uint64_t> buf(n);
  for (std::size_t i = 0; i < n; ++i) buf[i] = i;  // touch every page before timing
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(pool.size()));
  double best = 0;
  for (int r = 0; r < std::max(1, reps); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(static_cast<std::int64_t>(n), 4096, [&](std::int64_t begin, std::int64_t end, int worker) {
      // Four independent sums keep the loop bound by loads, not by one add chain.
      std::uint64_t a = 0, b = 0, c = 0, d = 0;
      std::int64_t i = begin;
      for (; i + 4 <= end; i += 4) {
        a += buf[i];
        b += buf[i + 1];
        c += buf[i + 2];
        d += buf[i + 3];
      }
      for (; i < end; ++i) a += buf[i];
      sums[static_cast<std::size_t>(worker)] += a + b + c + d;
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n * sizeof(std::uint64_t)) / s / 1e9);
  }
  // The sums are read so the loads cannot be optimised away.
  volatile std::uint64_t sink = 0;
  for (auto s : sums) sink = sink + s;
  return best;
}

}  // namespace staticlm
