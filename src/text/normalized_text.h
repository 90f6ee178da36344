// NormalizedText: a piece of the input after normalization, with, for each byte, the byte offset
// in the original input it came from. The `tokenizers` library keeps the same alignment; the
// only part of it that changes ids is "does this piece start at original offset 0" (Metaspace
// with prepend_scheme "first"), so only the start of each alignment is kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace staticlm {

// Tracking costs four bytes per byte, so a tokenizer that never asks for origins does not keep
// them: `origin` is then empty whatever the text (tracked() is false).
struct NormalizedText {
  std::string text;
  std::vector<std::uint32_t> origin;  // origin.size() == text.size() when tracked
  std::uint32_t base = 0;             // original offset where this piece started when it was cut

  bool tracked() const { return !origin.empty(); }

  // An unnormalized piece of the input that starts at original offset `start`.
  static NormalizedText original(std::string_view s, std::uint32_t start, bool track = true) {
    NormalizedText t;
    t.text.assign(s);
    if (track) {
      t.origin.resize(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) t.origin[i] = start + static_cast<std::uint32_t>(i);
    }
    t.base = start;
    return t;
  }

  // Bytes [b, e) of this piece (b < e, on character boundaries).
  NormalizedText slice(std::size_t b, std::size_t e) const {
    NormalizedText t;
    t.text.assign(text, b, e - b);
    if (tracked()) {
      t.origin.assign(origin.begin() + static_cast<std::ptrdiff_t>(b), origin.begin() + static_cast<std::ptrdiff_t>(e));
      t.base = origin[b];
    } else {
      t.base = base;
    }
    return t;
  }

  // Original offset where this piece starts (what `offsets_original().0` gives upstream: fixed
  // when the piece is cut, whatever normalization does to its first bytes later).
  std::uint32_t original_start() const { return base; }
};

}  // namespace staticlm
