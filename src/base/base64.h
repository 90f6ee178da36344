// Base64 (RFC 4648, the standard alphabet with '=' padding) decoding, for images sent inline as
// data URLs (`data:image/png;base64,...`). Pure function, no ownership.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

// Decodes `text`; ASCII whitespace is skipped (MIME line breaks). Throws kInvalidArgument naming
// `what` and the offset of the first character that is not base64, or a wrong length/padding.
std::vector<std::uint8_t> base64_decode(std::string_view text, const std::string& what);

}  // namespace staticlm
