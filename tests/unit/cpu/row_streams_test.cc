// Shared row streams (row_streams.h): in a parallel_rows_shared loop every row is computed
// exactly once, a thread done early takes rows of a slow one, and a throwing row leaves no
// thread waiting. (That the GEMVs give the same numbers on a pool: matmul_test.cc.)
#include "backends/cpu/kernels/row_streams.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace staticlm::cpu {
namespace {

// Rows [0, 16 * blocks): block range [b0, b1) per thread, each range walked by in_streams; the
// rows of thread 0's range take 20 us each, so thread 1 runs out first and must take some.
struct Walk {
  std::vector<std::atomic<int>> count;
  std::vector<std::atomic<std::thread::id>> by;
  explicit Walk(std::int64_t rows) : count(static_cast<std::size_t>(rows)), by(static_cast<std::size_t>(rows)) {}
};

void walk(ThreadPool* pool, std::int64_t blocks, std::int64_t slow_below, Walk& w, double bytes = kStealMinBytes) {
  parallel_rows_shared(pool, blocks, 1e6, bytes, [&](std::int64_t b0, std::int64_t b1) {
    // One row short of whole blocks at the end: rows left over by the streams (one at a time).
    const std::int64_t j1 = std::min(b1 * 16, blocks * 16 - 1);
    in_streams(b0 * 16, j1, [&](std::int64_t j, std::int64_t part, auto n) {
      for (int i = 0; i < decltype(n)::value; ++i) {
        const auto row = static_cast<std::size_t>(j + i * part);
        w.count[row].fetch_add(1);
        w.by[row].store(std::this_thread::get_id());
        if (static_cast<std::int64_t>(row) < slow_below) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  });
}

TEST(RowStreams, EveryRowOnceAndTheIdleThreadTakesRowsOfTheSlowOne) {
  ThreadPool pool(2);
  const std::int64_t blocks = 40, rows = 16 * blocks;
  Walk w(rows);
  walk(&pool, blocks, rows / 2, w);  // thread 0 owns rows [0, 320): all slow
  for (std::int64_t j = 0; j < rows - 1; ++j) EXPECT_EQ(w.count[static_cast<std::size_t>(j)].load(), 1) << "row " << j;
  EXPECT_EQ(w.count[static_cast<std::size_t>(rows - 1)].load(), 0);
  // Thread 0 is the caller; rows of its half computed by another thread were taken.
  const std::thread::id caller = std::this_thread::get_id();
  int taken = 0, own = 0;
  for (std::int64_t j = 0; j < rows / 2; ++j) (w.by[static_cast<std::size_t>(j)].load() == caller ? own : taken)++;
  EXPECT_GT(taken, 0);
  EXPECT_GT(own, 0);
  // Taken from the back of the streams, whole claims of kStealRows rows per stream.
  EXPECT_EQ(taken % (kStealRows * kStreamRows), 0);
}

// A loop that reads less than kStealMinBytes is split evenly and not shared: the slow half stays
// with its owner, and every row is still computed once.
TEST(RowStreams, SmallLoopsAreSplitEvenlyAndNotShared) {
  ThreadPool pool(2);
  const std::int64_t blocks = 40, rows = 16 * blocks;
  Walk w(rows);
  walk(&pool, blocks, rows / 2, w, kStealMinBytes - 1);
  for (std::int64_t j = 0; j < rows - 1; ++j) EXPECT_EQ(w.count[static_cast<std::size_t>(j)].load(), 1) << "row " << j;
  const std::thread::id caller = std::this_thread::get_id();
  for (std::int64_t j = 0; j < rows - 1; ++j) {
    ASSERT_EQ(w.by[static_cast<std::size_t>(j)].load() == caller, j < rows / 2) << "row " << j;
  }
}

TEST(RowStreams, WithoutPoolOrOneThreadNothingIsShared) {
  for (int threads : {0, 1, 3}) {
    ThreadPool pool(threads > 0 ? threads : 1);
    const std::int64_t blocks = 21, rows = 16 * blocks;
    Walk w(rows);
    walk(threads > 0 ? &pool : nullptr, blocks, 0, w);
    for (std::int64_t j = 0; j < rows - 1; ++j) ASSERT_EQ(w.count[static_cast<std::size_t>(j)].load(), 1) << threads << " row " << j;
  }
}

// A body that throws leaves no thread waiting: the exception comes back from the loop.
TEST(RowStreams, ThrowingBodyDoesNotHang) {
  ThreadPool pool(2);
  EXPECT_THROW(parallel_rows_shared(&pool, 64, 1e6, kStealMinBytes,
                                    [&](std::int64_t b0, std::int64_t b1) {
                                      in_streams(b0 * 16, b1 * 16, [&](std::int64_t j, std::int64_t, auto) {
                                        if (j == 40) throw std::runtime_error("row 40");
                                      });
                                    }),
               std::runtime_error);
}

}  // namespace
}  // namespace staticlm::cpu
