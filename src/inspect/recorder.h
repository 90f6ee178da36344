// The subgraph I/O recorder: an ObservedBackend observer that writes every subgraph call's
// inputs and outputs to a directory, one safetensors file per call, plus an index.json that
// lists the calls and the setup they ran under (model, backend, profile, the CPU options that
// decide bits). `staticlm replay` (inspect/replay.h) runs such a recording again on a backend
// and compares; a graph being brought up on another backend gets exact inputs and expected
// outputs this way. Layout and format: docs/record-replay.md.
//
//   DIR/000000_vision_prefill.safetensors   in.<input name>..., out.<output name>...
//   DIR/000001_token_embedding.safetensors  (NNNNNN: the call's index, zero-padded)
//   DIR/index.json                          {"format": "staticlm-record", "version": 1, ...}
//
// Use: Recorder rec(dir, setup); observed.add_observer(rec.observer()); ...run...; rec.finish().
// Each call file is written atomically inside the call (the views are only valid then);
// index.json is written atomically by finish(): a recording without it is incomplete.
//
// Ownership: the observer borrows the Recorder, which must outlive every call through the
// backend it observes. Not thread-safe (nor is a backend).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "backends/observed_backend.h"
#include "staticlm/backend.h"
#include "tensor/tensor.h"

namespace staticlm {
struct CpuBackendOptions;
}

namespace staticlm::inspect {

inline constexpr const char* kRecordFormat = "staticlm-record";
inline constexpr int kRecordVersion = 1;
inline constexpr const char* kRecordIndex = "index.json";

// What a recording ran under: enough to build the same backend again.
struct RecordSetup {
  std::string model_dir;  // stored absolute
  std::string backend = "cpu";
  SubgraphProfile profile;
  // CPU backend options that change bits (backends/cpu/cpu_backend.h).
  bool bf16_activations = true;
  bool skip_padded_rows = true;
  std::string kernel_target;  // empty: cpu::kernel_target() when the Recorder is created
};

// The setup of a backend built from model_dir with these CPU options (name and profile from
// the backend; the kernel target running now).
RecordSetup record_setup(const std::string& model_dir, const Backend& backend, const CpuBackendOptions& options);

// index.json's "setup" object, and back. setup_from_json throws kInvalidFile naming `where`
// and the field when a field is missing or has the wrong type.
nlohmann::json setup_to_json(const RecordSetup& setup);
RecordSetup setup_from_json(const nlohmann::json& j, const std::string& where);

// True when graph is `pattern`, or starts with `pattern` followed by '_' (so
// "decoder_layer_prefill" selects every decoder_layer_prefill_{i}, and "decoder_layer_decode_1"
// only layer 1). Used by Recorder::only_graphs and `replay --graph`.
bool graph_matches(const std::string& graph, const std::string& pattern);

// "000003_decoder_layer_prefill_0.safetensors".
std::string call_file_name(std::int64_t index, const std::string& graph);

// One tensor of a recorded call as index.json lists it (name without the in./out. prefix).
struct RecordedTensor {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};

struct RecordedCallEntry {
  std::int64_t index = 0;
  std::string graph;
  std::string file;  // name inside the recording directory
  std::vector<RecordedTensor> inputs, outputs;
};

class Recorder {
 public:
  // Refuses (kInvalidArgument naming it) a dir that exists and is not an empty directory;
  // creates it (and its parents) otherwise.
  Recorder(const std::string& dir, RecordSetup setup);

  // What the constructor refuses, found without creating anything (commands check before slow work).
  static void check_dir(const std::string& dir);
  // A recording never finished (the run failed before finish()) is removed: the call files it
  // wrote, and the directory when it created it. No half recording is left behind.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Records only calls whose graph matches one of the patterns (graph_matches); none: every call.
  void only_graphs(std::vector<std::string> patterns) { patterns_ = std::move(patterns); }

  // An observer that calls record(); borrows this Recorder.
  ObservedBackend::Observer observer();
  // Writes DIR/NNNNNN_<graph>.safetensors (every input as in.<name>, every output as
  // out.<name>, with the dtype and shape passed) and appends the call to the index.
  void record(const SubgraphCall& call);
  // Writes DIR/index.json atomically (again on each call: a later finish() includes later calls).
  void finish() const;

  const std::string& dir() const { return dir_; }
  const RecordSetup& setup() const { return setup_; }
  const std::vector<RecordedCallEntry>& calls() const { return calls_; }
  std::uint64_t bytes_written() const { return bytes_; }

 private:
  std::string dir_;
  RecordSetup setup_;
  std::vector<std::string> patterns_;
  std::vector<RecordedCallEntry> calls_;
  std::uint64_t bytes_ = 0;
  bool created_dir_ = false;
  mutable bool finished_ = false;
};

}  // namespace staticlm::inspect
