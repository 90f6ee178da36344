#include "base/thread_pool.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace staticlm {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) invalid_argument("thread pool: " + std::to_string(threads) + " threads, expected at least 1");
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mu_);
    start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    const auto [begin, end] = chunks_[static_cast<std::size_t>(index)];
    const Body* body = body_;
    lock.unlock();
    std::exception_ptr err;
    if (begin < end) {
      try {
        (*body)(begin, end, index);
      } catch (...) {
        err = std::current_exception();
      }
    }
    lock.lock();
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_cv_.notify_one();
  }
}

void ThreadPool::parallel_for(std::int64_t n, std::int64_t grain, const Body& body) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t parts = size();
  // Chunk length: n / parts rounded up to a multiple of grain.
  std::int64_t len = (n + parts - 1) / parts;
  len = (len + grain - 1) / grain * grain;
  {
    std::lock_guard<std::mutex> lock(mu_);
    chunks_.assign(static_cast<std::size_t>(parts), {0, 0});
    for (std::int64_t p = 0; p < parts; ++p) {
      chunks_[static_cast<std::size_t>(p)] = {std::min(n, p * len), std::min(n, (p + 1) * len)};
    }
    body_ = &body;
    error_ = nullptr;
    pending_ = static_cast<int>(parts) - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  std::exception_ptr mine;
  try {
    const auto [begin, end] = chunks_[0];
    if (begin < end) body(begin, end, 0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  body_ = nullptr;
  if (mine) std::rethrow_exception(mine);
  if (error_) std::rethrow_exception(error_);
}

void parallel_for(ThreadPool* pool, std::int64_t n, std::int64_t grain, double cost_per_item,
                  const ThreadPool::Body& body) {
  // Below ~100k multiply-adds the wake-up costs more than it saves.
  if (pool == nullptr || pool->size() == 1 || static_cast<double>(n) * cost_per_item < 1e5) {
    if (n > 0) body(0, n, 0);
    return;
  }
  pool->parallel_for(n, grain, body);
}

}  // namespace staticlm
