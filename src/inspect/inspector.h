// The inspector's comparison: the static pipeline's Trace against a reference Trace, step by
// step (spec/static-runtime.md (e), steps 1-8), each step's metrics checked against its
// thresholds, with a per-layer table for the vision tower (step 3, when both sides have it),
// prefill (6) and decode (7) that names the first decoder layer whose output diverges.
//
// Value types; the report is also rendered as the printed table and as JSON (--report).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "inspect/metrics.h"
#include "inspect/thresholds.h"
#include "inspect/trace.h"
#include "runtime/static_inputs.h"

namespace staticlm::inspect {

struct LayerRow {
  int layer = 0;
  DiffMetrics metrics;  // for decode: the worst step's
  double added = 0;     // rel_l2 minus the previous layer's: the error this layer adds
  bool pass = true;
};

struct StepResult {
  int step = 0;
  std::string name;
  std::string status;  // "pass", "fail" or "n/a" (a step with nothing to compare, e.g. no image)
  bool pass() const { return status != "fail"; }
  std::string tensor;  // what the printed row shows
  std::vector<std::pair<std::string, double>> metrics;  // in print order
  std::vector<Bound> bounds;
  std::vector<std::string> failed;  // the bounds that did not hold, and other failures, in words
  std::string note;
  std::vector<LayerRow> layers;             // steps 3, 6, 7
  std::optional<int> first_divergent_layer;  // first layer over layer_rel_l2
  std::optional<int> largest_increase_layer;  // the layer that adds the most rel_l2
  nlohmann::ordered_json details;           // per tensor / per decode step

  std::optional<double> metric(const std::string& name) const;
};

struct Report {
  std::string model, reference;
  ToleranceClass tolerance = ToleranceClass::kF32;
  std::vector<StepResult> steps;
  std::optional<int> first_divergent_layer;  // step 6's, else step 7's
  bool pass() const;
};

struct CompareContext {
  const StaticInputs* inputs = nullptr;  // the static layout (step 1)
  std::int64_t pad_token_id = 0;
  std::optional<std::int64_t> image_token_id;
  Thresholds thresholds;
  std::vector<int> steps = {1, 2, 3, 4, 5, 6, 7, 8};
};

Report compare_traces(const Trace& actual, const Trace& reference, const CompareContext& context);

// "1-8", "6", "1,2,6-8" -> sorted step numbers. Throws kInvalidArgument naming the text.
std::vector<int> parse_steps(const std::string& text);

// The printed table (one row per step, then the localisation line and the verdict).
std::string format_table(const Report& report);
// {"pass", "model", "reference", "tolerance", "steps": [{"step", "name", "pass", "status",
// "metrics", "thresholds", "failed", ...}], "first_divergent_layer"}.
nlohmann::ordered_json report_json(const Report& report);

}  // namespace staticlm::inspect
