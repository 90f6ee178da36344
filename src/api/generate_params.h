// GenerateParams (public) -> GenerateOptions (the runtime's): the checkpoint's defaults
// (generation_config.json, EOS ids) with the set fields applied. Shared by Session and the CLI's
// sampling flags, so both read the defaults the same way.
#pragma once

#include "model/checkpoint.h"
#include "runtime/generation.h"
#include "staticlm/session.h"

namespace staticlm::api {

// Bad values are kInvalidArgument naming the field (e.g. "max_new_tokens -1").
GenerateOptions generate_options(const GenerateParams& params, const Checkpoint& checkpoint);

}  // namespace staticlm::api
