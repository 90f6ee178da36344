// Read bandwidth with the widest vector loads Highway's runtime dispatch picks: this file is
// compiled once per target (foreach_target re-includes it) and the best one runs.
#include "base/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/huge_pages.h"

#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "base/bandwidth.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace staticlm {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of p[0, n). Eight independent vector sums: each add waits only on its own chain, so the
// loop issues loads as fast as the core can and is bound by memory, not by add latency. With
// `prefetch`, every cache line is also prefetched 2 KiB ahead (non-temporal on x86), as the
// decode GEMV reads weights: the ceiling is the better of the two ways of streaming.
float SumFloats(const float* HWY_RESTRICT p, std::int64_t n, bool prefetch) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
  auto s4 = hn::Zero(d), s5 = hn::Zero(d), s6 = hn::Zero(d), s7 = hn::Zero(d);
  std::int64_t i = 0;
  for (; i + 8 * lanes <= n; i += 8 * lanes) {
    if (prefetch) {
      const char* ahead = reinterpret_cast<const char*>(p + i) + 2048;
      for (std::int64_t b = 0; b < 8 * lanes * static_cast<std::int64_t>(sizeof(float)); b += 64) {
#if HWY_ARCH_X86
        _mm_prefetch(ahead + b, _MM_HINT_NTA);
#else
        hwy::Prefetch(ahead + b);
#endif
      }
    }
    s0 = hn::Add(s0, hn::LoadU(d, p + i));
    s1 = hn::Add(s1, hn::LoadU(d, p + i + lanes));
    s2 = hn::Add(s2, hn::LoadU(d, p + i + 2 * lanes));
    s3 = hn::Add(s3, hn::LoadU(d, p + i + 3 * lanes));
    s4 = hn::Add(s4, hn::LoadU(d, p + i + 4 * lanes));
    s5 = hn::Add(s5, hn::LoadU(d, p + i + 5 * lanes));
    s6 = hn::Add(s6, hn::LoadU(d, p + i + 6 * lanes));
    s7 = hn::Add(s7, hn::LoadU(d, p + i + 7 * lanes));
  }
  const auto total = hn::Add(hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)), hn::Add(hn::Add(s4, s5), hn::Add(s6, s7)));
  float tail = 0;
  for (; i < n; ++i) tail += p[i];
  return hn::GetLane(hn::SumOfLanes(d, total)) + tail;
}

}  // namespace HWY_NAMESPACE
}  // namespace staticlm
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace staticlm {

HWY_EXPORT(SumFloats);

double measure_read_bandwidth(ThreadPool& pool, std::size_t bytes, int reps, bool huge_pages) {
  const std::int64_t n =
      static_cast<std::int64_t>(std::max<std::size_t>(bytes, std::size_t{64} << 20) / sizeof(float));
  // Chunks of whole pages: each thread streams its own contiguous range.
  const std::int64_t grain = 4096;
  hwy::AlignedFreeUniquePtr<float[]> plain;
  std::unique_ptr<HugePageBuffer> huge;
  float* data = nullptr;
  if (huge_pages) {
    huge = std::make_unique<HugePageBuffer>(static_cast<std::size_t>(n) * sizeof(float));
    data = static_cast<float*>(huge->data());
  } else {
    plain = hwy::AllocateAligned<float>(static_cast<std::size_t>(n));
    data = plain.get();
  }
  // Every page is touched before timing, by the thread that will read it, with distinct
  // contents: identical pages could be merged by the host (KSM) and then served from cache.
  pool.parallel_for(n, grain, [&](std::int64_t begin, std::int64_t end, int) {
    for (std::int64_t i = begin; i < end; ++i) data[i] = static_cast<float>(i);  // no two pages alike
  });
  std::vector<float> sums(static_cast<std::size_t>(pool.size()));
  double best = 0;
  for (int r = 0; r < 2 * std::max(1, reps); ++r) {
    const bool prefetch = r % 2 == 1;  // alternate plain and prefetched passes
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n, grain, [&](std::int64_t begin, std::int64_t end, int worker) {
      sums[static_cast<std::size_t>(worker)] += HWY_DYNAMIC_DISPATCH(SumFloats)(data + begin, end - begin, prefetch);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n) * sizeof(float) / s / 1e9);
  }
  // The sums are read so the loads cannot be optimised away.
  volatile float sink = 0;
  for (float s : sums) sink = sink + s;
  return best;
}

}  // namespace staticlm
#endif  // HWY_ONCE
