// --threads N, shared by the commands that run kernels: 0 means one thread per core; a negative
// count or one above kMaxThreads is refused by name before any thread is made (a typo must not
// try to start a million threads).
#pragma once

namespace staticlm::cli {

inline constexpr int kMaxThreads = 256;

// The thread count to use for `--threads requested`; kInvalidArgument naming the value otherwise.
int resolve_threads(int requested);

}  // namespace staticlm::cli
