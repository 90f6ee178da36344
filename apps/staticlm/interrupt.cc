#include "interrupt.h"

#include <signal.h>

#include <atomic>
#include <csignal>

namespace staticlm::cli {

namespace {

// Lock-free atomics: safe to touch in a signal handler (on whichever thread it runs).
std::atomic<bool> g_in_call{false}, g_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_interrupt(int) {
  if (g_in_call.load() && !g_requested.exchange(true)) return;  // the first of a call: a request
  std::signal(SIGINT, SIG_DFL);
  std::raise(SIGINT);
}

}  // namespace

void catch_interrupts() {
  struct sigaction sa = {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
}

std::function<bool()> interrupt_requested() {
  return [] { return g_requested.load(); };
}

InterruptibleCall::InterruptibleCall() {
  g_requested = false;
  g_in_call = true;
}

InterruptibleCall::~InterruptibleCall() { g_in_call = false; }

bool InterruptibleCall::requested() const { return g_requested.load(); }

}  // namespace staticlm::cli
