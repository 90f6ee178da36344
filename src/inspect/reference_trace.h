// Reference traces for the inspector: the independent dynamic execution (DynamicReference on
// the unpadded prompt, its own greedy tokens) and a Hugging Face dump written by
// tools/hf_golden.py (whatever tensors the file holds; older goldens hold only the logits and
// tokens, so steps 1-5 then have nothing to compare).
//
// Ownership: returns values; borrows its arguments for the call.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "inspect/dynamic_reference.h"
#include "inspect/static_trace.h"
#include "inspect/trace.h"
#include "model/layer_table.h"
#include "runtime/static_inputs.h"

namespace staticlm::inspect {

// Runs the reference on the processor's unpadded output; masks are laid out [T, max_seq] like
// the static side's. Greedy decoding stops when max_seq - 1 positions are used, as the static
// cache does.
Trace dynamic_trace(DynamicReference& reference, const ProcessorBatch& batch, std::int64_t max_seq,
                    const TracePlan& plan, int layers);

struct Golden {
  std::map<std::string, std::string> metadata;  // make_model_args, prompt_ids, max_seq, ...
  std::vector<std::int64_t> prompt_ids;         // the golden's input_ids (or metadata prompt_ids)
  Trace trace;
};

// Reads FILE.safetensors. Masks (when dumped) are widened to [T, max_seq]. Throws kInvalidFile
// naming the file and tensor for a missing prompt (neither input_ids nor prompt_ids metadata),
// or a tensor whose shape disagrees with T, the layer count, or the other tensors.
Golden load_golden(const std::string& path, std::int64_t max_seq, int layers);

}  // namespace staticlm::inspect
