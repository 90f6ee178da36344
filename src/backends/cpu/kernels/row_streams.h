// How the decode GEMVs walk their output rows: a thread's rows [j0, j1) are cut in kStreamRows
// equal parts and row i of every part is read together. The activation loads then serve
// kStreamRows rows, and the rows are kStreamRows sequential streams far apart, which the
// hardware prefetchers follow (adjacent rows read by turns were not: half the speed from
// memory). Used by the Highway GEMV (gemm.cc) and the VNNI GEMV (gemv_vnni.cc).
//
// Inside a shared-rows loop (parallel_rows_shared, below) the calls are also open to the
// loop's other threads: the owner takes the next kStealRows rows of its streams from the front,
// and a thread done with its own rows takes them from the back (the owner's streams stay
// sequential). Each row is still computed whole, with the same instructions, by one thread, so
// the results do not depend on who took it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <type_traits>

#include "base/spin_pause.h"
#include "base/thread_pool.h"

namespace staticlm::cpu {

inline constexpr int kStreamRows = 4;
// Rows of each stream per claim: the owner pays one compare-and-swap per claim, a thief starts
// kStreamRows cold streams per claim.
inline constexpr std::int64_t kStealRows = 8;

// One participant's current in_streams call, as the others see it.
struct alignas(64) StreamSlot {
  // Rows of the streams still to do, [next, end): (end << 32) | next.
  std::atomic<std::uint64_t> span{0};
  std::atomic<int> thieves{0};        // threads inside this slot (the owner waits for none)
  std::atomic<bool> open{false};      // the fields below describe the owner's current call
  std::atomic<bool> finished{false};  // the owner is done with its own rows
  std::atomic<std::int64_t> j0{0}, part{0};
  std::atomic<const void*> rows{nullptr};
  std::atomic<void (*)(const void*, std::int64_t, std::int64_t)> run{nullptr};

  bool claim_front(std::int64_t& t0, std::int64_t& t1);
  bool claim_back(std::int64_t& t0, std::int64_t& t1);
};

// The slot in_streams opens its calls in; null outside shared-rows loops.
inline thread_local StreamSlot* current_stream_slot = nullptr;

// Runs rows of the other slots' open calls until every other slot is finished.
void steal_rows(std::span<StreamSlot> slots, std::size_t me);

// Loops that read fewer bytes than this split their rows evenly and share none: the claims and
// the wait for every slot at the end cost 1-2 us a loop on the 2-vCPU VM, more than evening
// out the threads recovers on a small matrix (measured, U4 weights from memory, two threads:
// 256 x 1536 9.5 -> 7.5-8.9 us, 1536 x 256 12-15 -> 9-10 us, 1536 x 1536 26-28.5 -> 24-26 us
// without sharing; 6144 x 1536 84-98 us shared against 92-108 not).
inline constexpr double kStealMinBytes = 2 << 20;

// Decode loops: blocks [0, blocks) split evenly over the pool's threads, body(b0, b1) on each,
// with the in_streams calls inside open to the other threads (see above) when the loop reads at
// least kStealMinBytes (`bytes`: the weights it streams). On a shared VM one core often runs
// 5-20% slower than the other, by the second, and the faster one waited for it at the end of
// every decode GEMV. cost_per_block in rough multiply-adds (small loops run inline, as
// parallel_for decides).
void parallel_rows_shared(ThreadPool* pool, std::int64_t blocks, double cost_per_block, double bytes,
                          const std::function<void(std::int64_t, std::int64_t)>& body);

// rows(j, part, n) computes the n rows j, j + part, ..., with n = kStreamRows (an
// std::integral_constant), then n = 1 (part 0) for each row left over. rows must be callable
// from another thread while this call runs (it is, when it captures only what this call reads).
template <typename Rows>
void in_streams(std::int64_t j0, std::int64_t j1, Rows rows) {
  using Streams = std::integral_constant<int, kStreamRows>;
  const std::int64_t part = (j1 - j0) / kStreamRows;
  StreamSlot* slot = current_stream_slot;
  if (slot == nullptr || part < 2 * kStealRows) {
    for (std::int64_t i = 0; i < part; ++i) rows(j0 + i, part, Streams{});
  } else {
    slot->j0.store(j0, std::memory_order_relaxed);
    slot->part.store(part, std::memory_order_relaxed);
    slot->rows.store(&rows, std::memory_order_relaxed);
    slot->run.store([](const void* r, std::int64_t j, std::int64_t p) { (*static_cast<const Rows*>(r))(j, p, Streams{}); },
                    std::memory_order_relaxed);
    slot->span.store(static_cast<std::uint64_t>(part) << 32);
    slot->open.store(true);
    // Closed on every way out (rows may throw): no new thief past this, and the ones inside
    // finish their rows before `rows` goes away.
    struct Close {
      StreamSlot* slot;
      ~Close() {
        slot->open.store(false);
        while (slot->thieves.load() != 0) spin_pause();
      }
    } close{slot};
    std::int64_t t0 = 0, t1 = 0;
    while (slot->claim_front(t0, t1)) {
      for (std::int64_t t = t0; t < t1; ++t) rows(j0 + t, part, Streams{});
    }
  }
  for (std::int64_t j = j0 + part * kStreamRows; j < j1; ++j) rows(j, std::int64_t{0}, std::integral_constant<int, 1>{});
}

}  // namespace staticlm::cpu
