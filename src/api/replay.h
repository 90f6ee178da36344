// The run behind `staticlm replay`: a recording's subgraph calls (`run --record`,
// inspect/recorder.h) run again on a CPU back end built as recorded (model, profile, bf16
// activations, kernel target when this CPU has it), each output compared with the recorded one
// (inspect/replay.h). Internal to the library (the CLI's); docs/record-replay.md.
//
// Ownership: replay() owns everything it makes (checkpoint, thread pool, back end) for the
// length of the call; the callbacks run on the calling thread.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/replay.h"

namespace staticlm::api {

struct ReplayOptions {
  std::string record;                 // the recording directory (holds index.json)
  std::optional<std::string> graph;   // only this graph, or the graphs it is a prefix of up to '_'
  std::optional<std::string> model;   // the checkpoint (default: the one recorded)
  std::optional<std::string> kernel_target;  // pin this target (default: the recorded one when present)
  std::optional<double> tolerance;    // pass an output within this PEIR (default: bit-exact)
  int threads = 1;                    // workers of the pool (already resolved: > 0)
  // Notes on what differs from the recording ("note: ..."); null: none.
  std::function<void(const std::string&)> log;
};

// What is about to run, once every selected call file has been checked.
struct ReplayPlan {
  std::size_t selected = 0, recorded = 0;  // calls to replay, calls in the recording
  std::string dir, target, model;          // recording, kernel target, checkpoint
};

struct ReplayResult {
  std::vector<inspect::CallReplay> calls;
  nlohmann::json report;  // inspect::replay_report_json: {"summary": {"outputs", "bit_exact", "failed"}, ...}
};

// Throws Error for a bad tolerance or a refused recording (missing or malformed index, a call
// file missing or not matching its graph's signature), before anything runs. on_start is
// called once before the first call, on_call after each.
ReplayResult replay(const ReplayOptions& options, const std::function<void(const ReplayPlan&)>& on_start,
                    const std::function<void(const inspect::CallReplay&)>& on_call);

}  // namespace staticlm::api
