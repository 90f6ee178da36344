// The machine's memory read bandwidth, measured: the limit decode speed is compared against
// (decode of a large model reads every weight once per token).
#pragma once

#include <cstddef>

#include "base/thread_pool.h"

namespace staticlm {

// Best of 2 x `reps` timed passes summing a buffer of `bytes` (at least 64 MiB, so caches do not
// serve it) with vector loads, plain and with software prefetch in turn, split over all the pool's threads at once; returns GB/s (1e9
// bytes per second). The buffer is allocated (and counts toward peak RSS) only during the call.
// huge_pages: the buffer is a HugePageBuffer (2 MiB pages where the kernel gives them), as the
// weights are with CpuBackendOptions::resident_weights; otherwise plain allocated memory.
double measure_read_bandwidth(ThreadPool& pool, std::size_t bytes = std::size_t{1} << 30, int reps = 5,
                              bool huge_pages = false);

}  // namespace staticlm
