// A Session or a Chat serves one call at a time. A second call while one runs (another thread's,
// or one made from the first call's own token callback) is refused by name instead of running
// two generations over one KV cache (which corrupted the cache, or the heap).
#pragma once

#include <atomic>
#include <string>
#include <utility>

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

// A OneCall that runs `on_end` when the call ends (returning or throwing), before the next call
// may start: where a call publishes what getters read from other threads.
template <class OnEnd>
class OneCallThen {
 public:
  OneCallThen(std::atomic<bool>& busy, const char* what, OnEnd on_end) : call_(busy, what), on_end_(std::move(on_end)) {}
  ~OneCallThen() { on_end_(); }
  OneCallThen(const OneCallThen&) = delete;
  OneCallThen& operator=(const OneCallThen&) = delete;

 private:
  OneCall call_;  // released after on_end_ ran
  OnEnd on_end_;
};

}  // namespace staticlm::api
