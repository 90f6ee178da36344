// GenerateParams (public) -> GenerateOptions (the runtime's): the checkpoint's defaults
// (generation_config.json, EOS ids) with the set fields applied. Shared by Session and the CLI's
// sampling flags, so both read the defaults the same way.
#pragma once

#include "model/checkpoint.h"
#include "runtime/generation.h"
#include "runtime/runtime_state.h"
#include "staticlm/session.h"
#include "text/tokenizer.h"

namespace staticlm::api {

// Bad values are kInvalidArgument naming the field (e.g. "max_new_tokens -1"). `tokenizer`: the
// checkpoint's, needed for json_schema and grammar (may be null otherwise); it must outlive the options.
// What generate_options refuses without the checkpoint (the values given, the JSON Schema):
// commands run it before the slow checkpoint load.
void check_generate_params(const GenerateParams& params);

GenerateOptions generate_options(const GenerateParams& params, const Checkpoint& checkpoint,
                                 const staticlm::Tokenizer* tokenizer = nullptr);

// The result of a call whose should_stop gave up the prompt part-way: no tokens, "stopped by caller".
staticlm::GenerationResult stopped_in_prompt(const StoppedByCaller& stopped);

}  // namespace staticlm::api
