#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/error.h"

namespace staticlm {
namespace {

TEST(ThreadPool, EveryItemRunsExactlyOnceInContiguousChunks) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (std::int64_t n : {1, 2, 7, 100, 1001}) {
    std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
    std::vector<std::atomic<int>> by_worker(3);
    pool.parallel_for(n, 4, [&](std::int64_t b, std::int64_t e, int worker) {
      ASSERT_GE(worker, 0);
      ASSERT_LT(worker, 3);
      ASSERT_LT(b, e);
      EXPECT_TRUE(b % 4 == 0) << "chunks start on a grain boundary";
      ++by_worker[static_cast<std::size_t>(worker)];
      for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(i)];
    });
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<std::size_t>(i)], 1) << "n " << n << " item " << i;
    for (auto& w : by_worker) EXPECT_LE(w, 1);  // at most one chunk per participant
  }
}

TEST(ThreadPool, RunsManyLoopsInARow) {
  ThreadPool pool(2);
  std::atomic<std::int64_t> sum{0};
  for (int round = 0; round < 200; ++round) {
    pool.parallel_for(10, 1, [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t i = b; i < e; ++i) sum += i;
    });
  }
  EXPECT_EQ(sum, 200 * 45);
}

// Chunks far longer than the spin (5 ms) make the waiting side sleep: the caller waiting for a
// slow worker, and workers waiting through a long gap between loops. Each must still be woken
// (a lost wake-up hangs here) and see every item of its loop.
TEST(ThreadPool, SleepingCallerAndWorkersAreWoken) {
  ThreadPool pool(3);
  for (int round = 0; round < 6; ++round) {
    std::atomic<std::int64_t> sum{0};
    const bool slow_workers = round % 2 == 0;
    pool.parallel_for(30, 1, [&](std::int64_t b, std::int64_t e, int worker) {
      if ((worker != 0) == slow_workers) std::this_thread::sleep_for(std::chrono::milliseconds(12));
      for (std::int64_t i = b; i < e; ++i) sum += i;
    });
    EXPECT_EQ(sum, 29 * 30 / 2) << "round " << round;
    if (round % 3 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(12));  // the workers sleep
  }
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(9, 1,
                                 [&](std::int64_t b, std::int64_t, int) {
                                   if (b >= 3) throw std::runtime_error("chunk failed");
                                 }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(9, 1, [&](std::int64_t b, std::int64_t e, int) { n += static_cast<int>(e - b); });
  EXPECT_EQ(n, 9);
}

TEST(ThreadPool, NullOrSmallWorkRunsInline) {
  int calls = 0;
  parallel_for(nullptr, 10, 1, 1e9, [&](std::int64_t b, std::int64_t e, int worker) {
    ++calls;
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 10);
    EXPECT_EQ(worker, 0);
  });
  ThreadPool pool(4);
  parallel_for(&pool, 10, 1, 1.0, [&](std::int64_t b, std::int64_t e, int) {
    ++calls;
    EXPECT_EQ(e - b, 10);
  });
  EXPECT_EQ(calls, 2);
}

TEST(ThreadPool, SizeMustBePositive) {
  try {
    ThreadPool pool(0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "thread pool: 0 threads, expected at least 1");
  }
}

}  // namespace
}  // namespace staticlm
