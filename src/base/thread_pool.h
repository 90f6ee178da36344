// A fixed set of worker threads that runs one parallel loop at a time. Idle workers, and the
// caller waiting for them, spin for up to kSpinMicros before sleeping, so back-to-back loops
// (a decode step runs ~250) start and end without a wake-up. It is passed explicitly to
// whatever parallelises (no global pool); each loop says how it splits its work. A pool of size
// 1 runs everything on the calling thread.
//
// Ownership: the pool owns its threads and joins them in its destructor. parallel_for() must
// not be called from two threads at once, nor from inside a loop body.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace staticlm {

class ThreadPool {
 public:
  // `threads` counts the caller: threads - 1 workers are started. Throws kInvalidArgument for
  // threads < 1.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // A loop body: runs items [begin, end) as participant `worker` (0 .. size()-1; each
  // participant runs at most one chunk per loop, so `worker` can index per-thread scratch).
  using Body = std::function<void(std::int64_t begin, std::int64_t end, int worker)>;

  // Splits [0, n) into size() contiguous chunks of nearly equal length (multiples of `grain`
  // except the last) and runs them in parallel, the caller taking chunk 0. Returns when all
  // chunks are done; the first exception a chunk threw is then rethrown.
  void parallel_for(std::int64_t n, std::int64_t grain, const Body& body);

 private:
  void worker_loop(int index);
  // Participant p's chunk of the current loop.
  std::pair<std::int64_t, std::int64_t> chunk(int p) const;

  std::vector<std::thread> workers_;
  // A loop as the caller publishes it, in one cache line: a worker that sees the new generation
  // finds the rest in the line it just read. Each line that moves between two cores costs about
  // 0.25 us on the 2-vCPU VM this was measured on, and a decode step runs ~250 loops.
  // body, n and grain change only while no worker runs (before generation moves on).
  struct alignas(64) Launch {
    std::atomic<std::uint64_t> generation{0};
    std::atomic<bool> stop{false};
    const Body* body = nullptr;
    std::int64_t n = 0, grain = 1;
  } launch_;
  // Workers still inside the current loop, and whether the caller sleeps waiting for them: the
  // line the last worker writes and the caller reads.
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> caller_sleeps_{false};  // set under mu_ while the caller waits on done_cv_
  // Workers asleep on start_cv_ (counted under mu_): the caller takes mu_ to wake them only when
  // some are (seq_cst with the generation, so one side sees the other's write).
  alignas(64) std::atomic<int> sleepers_{0};
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  std::exception_ptr error_;  // the first exception a worker's chunk threw (under mu_)
};

// Runs body over [0, n) on `pool`, or inline as participant 0 when pool is null or the work
// (n * cost_per_item, in rough multiply-adds) is too small to be worth waking threads for.
void parallel_for(ThreadPool* pool, std::int64_t n, std::int64_t grain, double cost_per_item,
                  const ThreadPool::Body& body);

}  // namespace staticlm
