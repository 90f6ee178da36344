// Unicode normalization forms (NFC, NFD, NFKC, NFKD) over a NormalizedText, keeping each output
// character's original offset: a decomposed character's parts keep the offset of the character,
// a composed character takes the offset of its starter.
#pragma once

#include "text/normalized_text.h"

namespace staticlm {

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

void unicode_normalize(NormalizedText& t, UnicodeForm form);

}  // namespace staticlm
