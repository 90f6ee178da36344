// A Session or a Chat serves one call at a time. A second call while one runs (another thread's,
// or one made from the first call's own token callback) is refused by name instead of running
// two generations over one KV cache (which corrupted the cache, or the heap).
#pragma once

#include <atomic>
#include <string>

#include "base/error.h"

namespace staticlm::api {

class OneCall {
 public:
  // `what`: the object in the message ("this session", "this chat").
  OneCall(std::atomic<bool>& busy, const char* what) : busy_(busy) {
    if (busy_.exchange(true)) {
      invalid_argument(std::string(what) + " is in a call already (another thread's, or one made from its own token "
                                           "callback): it serves one call at a time");
    }
  }
  ~OneCall() { busy_ = false; }
  OneCall(const OneCall&) = delete;
  OneCall& operator=(const OneCall&) = delete;

 private:
  std::atomic<bool>& busy_;
};

}  // namespace staticlm::api
