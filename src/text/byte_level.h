// Byte-level BPE (GPT-2, Llama 3, Qwen): every byte of the input is spelled as one printable
// character before the model sees it, so the vocabulary holds no raw bytes. The map is the
// `tokenizers` library's: bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves, the
// other 68 bytes in increasing order for U+0100, U+0101, ... (so ' ' is U+0120 'Ġ').
#pragma once

#include <string>
#include <string_view>

#include "text/normalized_text.h"

namespace staticlm {

// Replaces every byte of t by its character (UTF-8), each keeping the origin of its byte.
void byte_level_spell(NormalizedText& t);

// The ByteLevel decoder's view of one token: the bytes its characters spell, or the token's own
// UTF-8 when some character is outside the map (as upstream).
std::string byte_level_unspell(std::string_view token);

// The pattern ByteLevel splits with when use_regex is set (GPT-2's: contractions, letters,
// digits, other symbols, each with an optional leading space, then runs of whitespace).
inline constexpr std::string_view kByteLevelPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace staticlm
