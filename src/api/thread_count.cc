#include "api/thread_count.h"

#include <algorithm>
#include <string>
#include <thread>

#include "base/error.h"

namespace staticlm::api {

int thread_count(int requested) {
  if (requested < 0 || requested > kMaxThreads) {
    invalid_argument("threads " + std::to_string(requested) + ": must be in [0, " + std::to_string(kMaxThreads) +
                     "] (0: one per core)");
  }
  if (requested > 0) return requested;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
}

}  // namespace staticlm::api
