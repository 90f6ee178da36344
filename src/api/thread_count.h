// The worker count a session or an inspection runs with: 0 means one per core; a negative count
// or one above kMaxThreads is refused by name before any thread is made (a typo must not try to
// start a million threads).
#pragma once

namespace staticlm::api {

inline constexpr int kMaxThreads = 256;

// kInvalidArgument naming `requested` when it is out of range.
int thread_count(int requested);

}  // namespace staticlm::api
