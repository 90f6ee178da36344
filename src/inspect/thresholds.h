// Pass/fail thresholds of the inspector's eight steps. Each step has named metrics, each either
// an upper bound (max_abs, mean_abs, peir, rel_l2, mismatches, layer_rel_l2, ...) or a lower
// bound (cosine, argmax, token_agreement: rates in [0, 1]). Defaults depend on what may
// legitimately differ between the two sides (the tolerance class): only f32 rounding, bf16/f16
// activation rounding, or a quantization scheme. `inspect.thresholds.<step>.<metric>` in the
// runtime config (and --set) replaces a default or adds a bound; <step> is 1-8 or the name.
//
// Value types.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace staticlm::inspect {

enum class ToleranceClass { kF32, kHalf, kQ8, kQ4, kNpuW4 };

const char* tolerance_class_name(ToleranceClass c);
// From a checkpoint's quantization scheme ("none", "q8", "q4", "npu-w4") and its float dtype
// ("F32", "BF16", "F16"): the scheme when quantized, else F32 or half.
ToleranceClass tolerance_class(const std::string& scheme, const std::string& float_dtype);
// The looser of two (the inspected checkpoint and a model: reference).
ToleranceClass looser(ToleranceClass a, ToleranceClass b);

struct Bound {
  std::string metric;
  double value = 0;
  bool lower = false;  // true: metric >= value; false: metric <= value
  bool holds(double metric_value) const;  // NaN never holds
  std::string describe() const;           // "peir<=0.001"
};

struct Thresholds {
  ToleranceClass tolerance = ToleranceClass::kF32;
  std::map<int, std::vector<Bound>> steps;  // step 1-8 -> its bounds
  const std::vector<Bound>& of(int step) const;
  std::optional<double> value(int step, const std::string& metric) const;
};

// Step names, 1-based: inputs, token_embedding, vision_prefill, mm_fusion, masks_and_rope,
// prefill, decode, generation.
const std::vector<std::string>& step_names();
// Metrics a step can bound.
const std::vector<std::string>& step_metrics(int step);

Thresholds default_thresholds(ToleranceClass tolerance);
// Applies "STEP.METRIC" -> value (RuntimeConfig::inspect_thresholds). Throws kInvalidArgument
// naming the key for an unknown step or metric, or a rate outside [0, 1].
void apply_threshold_overrides(Thresholds& t, const std::map<std::string, double>& overrides);

}  // namespace staticlm::inspect
