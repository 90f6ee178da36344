#include "threads_option.h"

#include <algorithm>
#include <string>
#include <thread>

#include "base/error.h"

namespace staticlm::cli {

int resolve_threads(int requested) {
  if (requested < 0) invalid_argument("--threads " + std::to_string(requested) + ": must be at least 1 (0: all cores)");
  if (requested > kMaxThreads) {
    invalid_argument("--threads " + std::to_string(requested) + ": at most " + std::to_string(kMaxThreads) +
                     " (the thread limit)");
  }
  if (requested > 0) return requested;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxThreads);
}

}  // namespace staticlm::cli
