// The conformance run behind `staticlm backend-check` (docs/backends.md): a back-end plug-in
// loaded and checked against the contract, then each graph it provides run on the first call
// of that graph from a recording, or from a CPU run of a prompt (prefill, an image prefill, and
// decode steps), its outputs compared with the CPU back end's (inspect/backend_check.h).
// Internal to the library (the CLI's).
//
// Ownership: run_backend_check owns everything it makes (checkpoint, thread pool, both back
// ends) for the length of the call.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "inspect/backend_check.h"

namespace staticlm::api {

struct BackendCheckOptions {
  std::string backend;  // plugin:PATH.so[:key=value,...]
  std::string model;
  std::optional<std::string> record;  // take the inputs from this recording
  // Or a generated run: a text prompt or token ids (with an image: text holding "<|image|>").
  std::optional<std::string> prompt, prompt_ids, config_file;
  std::vector<std::string> images, sets;
  std::optional<std::int64_t> max_seq;
  std::int64_t decode_steps = 2;
  std::string tolerance = "f32";  // f32, half, q8, q4 or npu-w4
  int threads = 1;                // workers of the reference's pool (already resolved: > 0)
  // The line that says what is checked; null: none.
  std::function<void(const std::string&)> log;
};

// Throws Error naming the flag or file for bad options, before the plug-in runs; a graph that
// fails is a result with pass() false.
inspect::BackendCheck run_backend_check(const BackendCheckOptions& options);

}  // namespace staticlm::api
