// Ctrl-C during a generation, as llama-cli takes it: the first one asks the call under way to
// stop (GenerateParams::should_stop: before the prompt's next layer or after the next token) and
// the command goes on with what it has; a second one, or one while no call runs, ends the program
// as the default action does.
#pragma once

#include <functional>

namespace staticlm::cli {

// Installs the SIGINT handler (once; SA_RESTART, so a read of stdin under way goes on).
void catch_interrupts();

// A should_stop that reads the handler's flag.
std::function<bool()> interrupt_requested();

// Marks a call under way for its lifetime (the flag cleared at its start): a Ctrl-C then only
// asks it to stop. requested(): one came during the call.
class InterruptibleCall {
 public:
  InterruptibleCall();
  ~InterruptibleCall();
  InterruptibleCall(const InterruptibleCall&) = delete;
  InterruptibleCall& operator=(const InterruptibleCall&) = delete;
  bool requested() const;
};

}  // namespace staticlm::cli
