#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "base/error.h"
#include "base/spin_pause.h"


namespace staticlm {

namespace {

// How long a thread spins for the next loop (worker) or for the others' parts (caller) before it
// sleeps. Waking a sleeping thread took 0.1-3 ms on the 2-vCPU VM this was measured on, and once
// one side sleeps the other tends to as well: with 100 us, q4 decode of E2B spent two thirds of
// its time waiting (9.5 tok/s; 24-29 tok/s with 2-10 ms). Measured with `staticlm run -m E2B_Q4
// --prompt-ids 2,105,2364 -n 100 --temp 0` (docs/performance.md).
constexpr auto kSpinMicros = std::chrono::microseconds(5000);
// After this long, the spinning thread also yields at each clock check, so a pool with more
// threads than cores does not starve the threads that have work.
constexpr auto kYieldAfter = std::chrono::microseconds(200);

// Spins until pred() or kSpinMicros have passed; true when pred() became true.
template <typename Pred>
bool spin_until(Pred pred) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0;; ++i) {
    if (pred()) return true;
    spin_pause();
    if ((i & 63) != 63) continue;
    const auto spent = std::chrono::steady_clock::now() - start;
    if (spent > kSpinMicros) return false;
    if (spent > kYieldAfter) std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) invalid_argument("thread pool: " + std::to_string(threads) + " threads, expected at least 1");
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    launch_.stop.store(true, std::memory_order_seq_cst);
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::pair<std::int64_t, std::int64_t> ThreadPool::chunk(int p) const {
  // size() chunks of n / size() rounded up to a multiple of grain; the last ones may be short or
  // empty.
  const std::int64_t n = launch_.n, grain = launch_.grain, parts = size();
  std::int64_t len = (n + parts - 1) / parts;
  len = (len + grain - 1) / grain * grain;
  return {std::min(n, p * len), std::min(n, (p + 1) * len)};
}

void ThreadPool::worker_loop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const auto ready = [&] {
      return launch_.stop.load(std::memory_order_acquire) ||
             launch_.generation.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      start_cv_.wait(lock, ready);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (launch_.stop.load(std::memory_order_acquire)) return;
    seen = launch_.generation.load(std::memory_order_acquire);
    const auto [begin, end] = chunk(index);
    if (begin < end) {
      try {
        (*launch_.body)(begin, end, index);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
    }
    // The last one out wakes the caller only if it sleeps: taking mu_ after every loop made
    // the caller, spinning for this decrement, block on the mutex (a futex wait) at the end
    // of one small loop in ten. seq_cst here and in the caller's flag and check: one of the
    // two sees the other's write.
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeps_.load(std::memory_order_seq_cst)) {
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t grain, const Body& body) {
  if (n <= 0) return;
  // No worker reads these now: the last loop's workers are done (pending_ reached 0) and wait
  // for the next generation.
  launch_.body = &body;
  launch_.n = n;
  launch_.grain = std::max<std::int64_t>(grain, 1);
  pending_.store(size() - 1, std::memory_order_relaxed);
  launch_.generation.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }  // a worker between its count and its wait holds mu_
    start_cv_.notify_all();
  }
  std::exception_ptr mine;
  try {
    const auto [begin, end] = chunk(0);
    if (begin < end) body(begin, end, 0);
  } catch (...) {
    mine = std::current_exception();
  }
  const auto done = [&] { return pending_.load(std::memory_order_seq_cst) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeps_.store(true, std::memory_order_seq_cst);
    done_cv_.wait(lock, done);
    caller_sleeps_.store(false, std::memory_order_relaxed);
  }
  launch_.body = nullptr;
  // The workers wrote error_ before their decrement of pending_, which the load above saw.
  std::exception_ptr theirs;
  std::swap(theirs, error_);
  if (mine) std::rethrow_exception(mine);
  if (theirs) std::rethrow_exception(theirs);
}

namespace {

// Below ~20k multiply-adds the hand-off costs more than it saves.
bool worth_threads(const ThreadPool* pool, std::int64_t n, double cost_per_item) {
  return pool != nullptr && pool->size() > 1 && static_cast<double>(n) * cost_per_item >= 2e4;
}

}  // namespace

void parallel_for(ThreadPool* pool, std::int64_t n, std::int64_t grain, double cost_per_item,
                  const ThreadPool::Body& body) {
  if (worth_threads(pool, n, cost_per_item)) return pool->parallel_for(n, grain, body);
  if (n > 0) body(0, n, 0);
}

}  // namespace staticlm
