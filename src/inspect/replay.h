// Replaying a recording (inspect/recorder.h): read DIR/index.json, check each call file against
// the backend's signature of its graph, run the graph on the recorded inputs into fresh output
// buffers and compare every output with the recorded one (inspect/metrics.h, plus bitwise
// equality). `staticlm replay` prints and judges the results; docs/record-replay.md.
//
// Errors in a recording (missing or unreadable index, wrong format or version, a call file that
// is missing, or lacks a tensor, or holds one with the wrong dtype or shape) are kInvalidFile
// with a one-line message naming the file and the tensor; a graph the backend does not have is
// kInvalidArgument.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "inspect/metrics.h"
#include "inspect/recorder.h"
#include "staticlm/backend.h"
#include "tensor/safetensors.h"

namespace staticlm::inspect {

struct Recording {
  std::string dir;
  RecordSetup setup;
  std::vector<RecordedCallEntry> calls;  // in index order
};

// Reads and checks DIR/index.json (format, version, setup, and each call's index, graph and a
// plain file name). Does not open the call files.
Recording read_recording(const std::string& dir);

// The calls to replay: every call, or those whose graph matches `graph` (graph_matches: exact,
// or a prefix ending before '_'). kInvalidArgument when `graph` names no subgraph of the
// backend, or no recorded call matches it; kInvalidFile when a recorded call's graph is not one
// of the backend's.
std::vector<RecordedCallEntry> select_calls(const Recording& recording, const Backend& backend,
                                            const std::optional<std::string>& graph);

// Opens DIR/<file> and checks it against the signature: every input (in.<name>) and output
// (out.<name>) present, no other tensor, the signature's dtype, and the signature's shape (a
// dynamic axis within 1..max and the same in every tensor of the call). kInvalidFile
// "<path>: missing tensor in.cos" / "<path>: tensor in.attention_mask: shape [..], expected [..]".
std::unique_ptr<SafetensorsFile> open_call_file(const std::string& path, const SubgraphSignature& signature);

struct OutputComparison {
  std::string name;    // the signature's output name
  DiffMetrics metrics;  // replayed (actual) vs recorded (reference)
  bool bit_exact = false;
};

struct CallReplay {
  std::int64_t index = 0;
  std::string graph, file;
  std::vector<OutputComparison> outputs;
};

// One output against its reference: bit equality and the metrics (as f32; 4-bit: bits only).
// The shapes must match.
OutputComparison compare_output(const std::string& name, const TensorView& actual, const TensorView& reference);

// Runs one recorded call (already checked by open_call_file) on the backend into fresh,
// zero-filled output buffers of the recorded shapes, and compares.
CallReplay replay_call(Backend& backend, const RecordedCallEntry& call, const SafetensorsFile& file);

// An output passes when bit-exact, or, given max_peir, when its metrics are finite and its
// PEIR is at most max_peir.
bool output_passes(const OutputComparison& o, std::optional<double> max_peir);

// The JSON `replay --json` prints and --report writes: {"record", "model_dir", "backend",
// "kernel_target", "tolerance", "calls": [{"index", "graph", "file", "outputs": [{"name",
// "count", "max_abs", "mean_abs", "peir", "cosine", "rel_l2", "bit_exact", "pass"}]}],
// "summary": {"calls", "outputs", "bit_exact", "passed", "failed", "pass"}} (NaN as null).
nlohmann::json replay_report_json(const Recording& recording, const std::string& model_dir,
                                  const std::string& backend, const std::string& kernel_target,
                                  const std::vector<CallReplay>& results, std::optional<double> max_peir);

}  // namespace staticlm::inspect
