// Reads a Hugging Face tokenizer.json into a TokenizerSpec. Components this runtime does not
// implement are refused with their name; malformed fields are refused with their path
// ("model.merges[12]: ..."). Nothing is kept from the input after the call.
#pragma once

#include <string>
#include <string_view>

#include "text/tokenizer_spec.h"

namespace staticlm {

// `name` (usually the file path) starts every error message.
TokenizerSpec parse_tokenizer_json(std::string_view json, const std::string& name);

}  // namespace staticlm
