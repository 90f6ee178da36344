// The static side of the inspector: runs one prompt through the fixed-shape pipeline (the
// Runtime over a CpuBackend, exactly as `staticlm run` does) and reads every step's tensor off
// the subgraph calls (ObservedBackend): embeddings, image features, the fused input, each
// decoder layer's mask, RoPE tables and output, the logits, then a greedy generation.
//
// Ownership: borrows the checkpoint and the thread pool in StaticRun; returns a value.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/observed_backend.h"
#include "inspect/trace.h"
#include "model/checkpoint.h"
#include "runtime/static_inputs.h"

namespace staticlm::inspect {

struct StaticRun {
  const Checkpoint* checkpoint = nullptr;
  SubgraphProfile profile;     // max_seq, rope_sine, and the image span and grid for an image prompt
  CpuBackendOptions backend;   // threads and precision policy
  float mask_fill_value = -120.0f;
  std::vector<ObservedBackend::Observer> observers;  // also shown every call (e.g. a recorder)
  // Builds another backend (a plug-in: backends/backend_factory.h) from the checkpoint,
  // profile and CPU options; empty: the CPU backend, whose vision-layer tap fills
  // Trace::vision_layers (left empty otherwise).
  std::function<std::unique_ptr<Backend>(const Checkpoint&, const SubgraphProfile&, const CpuBackendOptions&)>
      make_backend;
};

struct TracePlan {
  std::int64_t decode_steps = 4;  // step 7
  std::int64_t gen_steps = 16;    // step 8
  // Tokens fed at decode steps 0, 1, ... (the reference's, so both sides see the same history);
  // empty: each side feeds its own greedy choice. Steps stop early when the cache is full.
  std::vector<std::int64_t> feed;
};

// `inputs` is the static layout of the prompt (build_static_inputs); its raw ids and image
// inputs fill step 1 of the trace.
Trace static_trace(const StaticRun& run, const StaticInputs& inputs, const TracePlan& plan, const std::string& source);

}  // namespace staticlm::inspect
