// The back-end conformance suite (`staticlm backend-check`, docs/backends.md): runs every
// subgraph a candidate back end (a plug-in) provides on real inputs, one call per graph taken
// from a recording (recorder.h) or from a CPU run of a prompt, and compares each output with
// the CPU reference (replay.h compare_output: max |d|, PEIR, cosine; bounds per graph and
// dtype from the inspector's tolerance classes, thresholds.h). It also checks the contract
// every graph must keep: outputs written in full, inputs not modified, repeat calls giving the
// same bits, and buffers not used after run() returns.
//
// Ownership: a CheckCall owns copies of its tensors; the sampler's observer borrows the
// sampler.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "backends/observed_backend.h"
#include "inspect/replay.h"
#include "inspect/thresholds.h"
#include "staticlm/backend.h"
#include "tensor/tensor.h"

namespace staticlm::inspect {

// One subgraph call: its inputs and the reference outputs.
struct CheckCall {
  std::int64_t index = 0;  // the call's index in the run or recording
  std::string graph;
  std::vector<Tensor> inputs, outputs;
};

// An observer that keeps a copy of the first call of each graph.
class FirstCallSampler {
 public:
  ObservedBackend::Observer observer();
  std::vector<CheckCall> take() { return std::move(calls_); }

 private:
  std::vector<CheckCall> calls_;
  std::map<std::string, bool> seen_;
};

// The first recorded call of each graph the backend has (files checked by open_call_file).
std::vector<CheckCall> first_recorded_calls(const Recording& recording, const Backend& backend);

// Runs each call on the reference backend and keeps its outputs as the calls' reference (a
// recording may come from another backend or kernel target).
void recompute_reference(Backend& reference, std::vector<CheckCall>& calls);

// The bounds an output of `graph` with `dtype` must keep when it is not bit-exact; none for
// integer dtypes (they must be bit-exact).
std::vector<Bound> output_bounds(const std::string& graph, DType dtype, ToleranceClass tolerance);

struct GraphCheck {
  std::int64_t index = 0;
  std::string graph;
  std::vector<OutputComparison> outputs;  // the candidate's first run vs the reference
  std::vector<std::string> failures;      // one line each: "output logits: peir 0.01 > 0.001"
  bool pass() const { return failures.empty(); }
};

// Runs the call on the candidate (twice, on fresh buffers) and judges it.
GraphCheck check_call(Backend& candidate, const CheckCall& call, ToleranceClass tolerance);

struct BackendCheck {
  std::string backend, model_dir, source;  // source: "recording DIR" or "generated"
  ToleranceClass tolerance = ToleranceClass::kF32;
  std::vector<GraphCheck> graphs;
  std::vector<std::string> not_exercised;  // graphs the candidate has but no call ran
  std::vector<std::string> not_provided;   // contract graphs the candidate lacks
  bool pass() const;
};

// {"backend", "model_dir", "source", "tolerance", "graphs": [{"index", "graph", "pass",
// "failures", "outputs": [{"name", "count", "max_abs", "mean_abs", "peir", "cosine",
// "rel_l2", "bit_exact"}]}], "not_exercised", "not_provided", "pass"} (NaN as null).
nlohmann::json backend_check_json(const BackendCheck& check);
// A table of graphs, then one "FAIL <graph>: <failure>" line per failure and a summary line.
std::string format_backend_check(const BackendCheck& check);

}  // namespace staticlm::inspect
