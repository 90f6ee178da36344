// The inspector (spec/static-runtime.md (e)): the static pipeline against a reference, step by
// step (1-8), each step's metrics checked against its thresholds, with the first decoder layer
// whose output diverges.
//
// Ownership and threading: inspect() owns everything it makes (checkpoints, a thread pool of
// `threads` workers) for the length of the call; independent calls may run in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/error.h"

namespace staticlm::api {

struct InspectOptions {
  std::string model_dir;
  std::string config_file;        // runtime config YAML ("" : none)
  std::vector<std::string> sets;  // "key=value" overrides
  // The prompt: text (as given; "<|image|>" marks the image) or token ids; with neither, the
  // golden file's ids (reference golden:...) or the runtime config's prompt.
  std::optional<std::string> prompt;
  std::vector<std::int64_t> prompt_ids;
  std::vector<std::string> images;
  // dynamic (an independent unpadded execution), model:DIR2 (the static pipeline on another
  // checkpoint of the model) or golden:FILE.safetensors (tools/hf_golden.py).
  std::string reference = "dynamic";
  std::string steps = "1-8";
  std::optional<std::int64_t> decode_steps, gen_steps, max_seq;
  int threads = 0;  // 0: one per core
  bool f32_activations = false;
  std::string record_dir;  // write the static side's subgraph calls here ("" : off)
  // The static side's back end: "cpu" or "plugin:PATH.so[:key=value,...]", with fallback "cpu"
  // or "none" (as SessionOptions); the reference always runs on the CPU kernels.
  std::string backend = "cpu";
  std::string fallback = "none";
  // Progress lines ("inspect: reference done in 0.4 s"); null: none.
  std::function<void(const std::string&)> log;
};

struct InspectReport {
  bool pass = false;
  std::string tolerance;  // the threshold class used (e.g. "f32", "bf16")
  std::string table;      // the printed table: one row per step, the localisation line, the verdict
  std::string json;       // {"pass", "model", "reference", "tolerance", "steps": [...], "first_divergent_layer"}
};

// Throws Error for bad options (naming them); a step that fails is a report with pass false.
InspectReport inspect(const InspectOptions& options);

}  // namespace staticlm::api
