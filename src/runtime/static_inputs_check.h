// Side-by-side check, step 1 (TICO's verify_step_build_static_inputs, spec/static-runtime.md (e)):
// every output of build_static_inputs is re-derived here, independently, from a raw processor
// output and compared exactly (all ints and bools; pixel values bit for bit). Each sub-check is
// reported by name, so a report says which part of the contract broke. Borrows its inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/static_inputs.h"

namespace staticlm {

struct InputCheck {
  std::string name;    // llm_input_ids, attention_mask, pixel_values, image_position_ids, valid_length, padding
  bool passed = false;
  std::string detail;  // what was compared, or the first difference
};

// `runtime`: what build_static_inputs returned; `reference`: the processor's output for the same
// prompt and image (ideally from a second, independent processor run).
std::vector<InputCheck> check_static_inputs(const StaticInputs& runtime, const ProcessorBatch& reference,
                                            std::int64_t max_seq, std::int64_t pad_token_id,
                                            std::optional<std::int64_t> image_token_id);

bool all_passed(const std::vector<InputCheck>& checks);

}  // namespace staticlm
