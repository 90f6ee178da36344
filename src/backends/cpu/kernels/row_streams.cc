// Claims on a StreamSlot's rows and the thieves' loop; see row_streams.h.
#include "backends/cpu/kernels/row_streams.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "base/spin_pause.h"

namespace staticlm::cpu {

namespace {

std::uint64_t pack(std::int64_t next, std::int64_t end) {
  return (static_cast<std::uint64_t>(end) << 32) | static_cast<std::uint64_t>(next);
}

}  // namespace

bool StreamSlot::claim_front(std::int64_t& t0, std::int64_t& t1) {
  std::uint64_t s = span.load();
  for (;;) {
    const auto next = static_cast<std::int64_t>(s & 0xFFFFFFFFu), end = static_cast<std::int64_t>(s >> 32);
    if (next >= end) return false;
    const std::int64_t n = std::min(kStealRows, end - next);
    if (span.compare_exchange_weak(s, pack(next + n, end))) {
      t0 = next, t1 = next + n;
      return true;
    }
  }
}

bool StreamSlot::claim_back(std::int64_t& t0, std::int64_t& t1) {
  std::uint64_t s = span.load();
  for (;;) {
    const auto next = static_cast<std::int64_t>(s & 0xFFFFFFFFu), end = static_cast<std::int64_t>(s >> 32);
    // Leave the owner its next claim: stealing rows it is about to read only restarts streams.
    if (end - next < 2 * kStealRows) return false;
    if (span.compare_exchange_weak(s, pack(next, end - kStealRows))) {
      t0 = end - kStealRows, t1 = end;
      return true;
    }
  }
}

void steal_rows(std::span<StreamSlot> slots, std::size_t me) {
  for (int idle = 0;; ++idle) {
    bool busy = false;
    for (std::size_t p = 0; p < slots.size(); ++p) {
      StreamSlot& s = slots[p];
      if (p == me || s.finished.load()) continue;
      busy = true;
      struct Inside {  // left on every way out: the owner waits for it
        StreamSlot& s;
        explicit Inside(StreamSlot& slot) : s(slot) { s.thieves.fetch_add(1); }
        ~Inside() { s.thieves.fetch_sub(1); }
      } inside(s);
      if (s.open.load()) {
        // open was stored after these, and the owner changes them only once no thief is inside.
        const auto run = s.run.load(std::memory_order_relaxed);
        const void* rows = s.rows.load(std::memory_order_relaxed);
        const std::int64_t j0 = s.j0.load(std::memory_order_relaxed), part = s.part.load(std::memory_order_relaxed);
        std::int64_t t0 = 0, t1 = 0;
        while (s.claim_back(t0, t1)) {
          for (std::int64_t t = t0; t < t1; ++t) run(rows, j0 + t, part);
        }
      }
    }
    if (!busy) return;
    spin_pause();
    // With more threads than cores the owner may need this core to finish.
    if (idle % 64 == 63) std::this_thread::yield();
  }
}

void parallel_rows_shared(ThreadPool* pool, std::int64_t blocks, double cost_per_block, double bytes,
                          const std::function<void(std::int64_t, std::int64_t)>& body) {
  const std::int64_t parts = pool != nullptr ? pool->size() : 1;
  // No slots: the rows are split evenly and nobody takes any (small loops, see kStealMinBytes).
  std::vector<StreamSlot> slots(bytes >= kStealMinBytes ? static_cast<std::size_t>(parts) : 0);
  parallel_for(pool, parts, 1, cost_per_block * static_cast<double>(blocks) / static_cast<double>(parts),
               [&](std::int64_t i0, std::int64_t i1, int) {
                 const bool shared = !slots.empty() && i1 - i0 == 1 && parts > 1;  // one slot per thread
                 for (std::int64_t i = i0; i < i1; ++i) {
                   if (slots.empty()) {
                     body(i * blocks / parts, (i + 1) * blocks / parts);
                     continue;
                   }
                   // Finished even when body throws: the thieves wait for every slot.
                   struct Finish {
                     StreamSlot& slot;
                     ~Finish() {
                       current_stream_slot = nullptr;
                       slot.finished.store(true);
                     }
                   } finish{slots[static_cast<std::size_t>(i)]};
                   current_stream_slot = shared ? &finish.slot : nullptr;
                   body(i * blocks / parts, (i + 1) * blocks / parts);
                 }
                 if (shared) steal_rows(slots, static_cast<std::size_t>(i0));
               });
}

}  // namespace staticlm::cpu
