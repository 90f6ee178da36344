// One step of a spin-wait: tells the core this thread is waiting (x86 PAUSE), so the other
// hardware thread and the memory system are not flooded; elsewhere a yield.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#else
#include <thread>
#endif

namespace staticlm {

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace staticlm
