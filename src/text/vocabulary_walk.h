// The vocabulary walked as a trie for a constraint: which tokens' bytes a byte-by-byte matcher
// takes from its state now. Shared by the JSON Schema and the grammar constraints.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "text/token_index.h"

namespace staticlm {

// A fresh mask of `vocab` tokens: none allowed but, where the text is whole, the end tokens.
inline void start_mask(const std::vector<std::int64_t>& end_ids, bool whole, std::int64_t vocab, std::vector<std::uint8_t>& allowed) {
  allowed.assign(static_cast<std::size_t>(vocab), 0);
  if (!whole) return;
  for (std::int64_t e : end_ids) {
    if (e >= 0 && e < vocab) allowed[static_cast<std::size_t>(e)] = 1;
  }
}

// The text a sampled token adds: its bytes, or null for an end token (it adds none) and for an
// id outside the index.
inline const std::string* token_text(const TokenIndex& index, const std::vector<std::int64_t>& end_ids, std::int64_t token,
                                     bool& is_end) {
  is_end = std::find(end_ids.begin(), end_ids.end(), token) != end_ids.end();
  if (is_end || token < 0 || static_cast<std::size_t>(token) >= index.bytes.size()) return nullptr;
  return &index.bytes[static_cast<std::size_t>(token)];
}

// Sets allowed[id] = 1 for each token of `index` (id < vocab) whose bytes `start` takes, or for
// which skip(id, bytes) says so without feeding it. `states` is scratch (a Matcher per byte depth).
// The sorted vocabulary as a trie: states[0..have] hold the matcher after each prefix of the
// token before; a token reuses those it shares, and one that shares the byte where the token
// before failed (at byte `failed`) fails too. Skipped tokens leave the states alone, so
// `shared` then spans the tokens passed over (the common prefix of two sorted strings is the
// least of the adjacent ones between them).
template <class Matcher, class Skip>
void allow_taken_tokens(const TokenIndex& index, const Matcher& start, std::vector<Matcher>& states, std::int64_t vocab,
                        std::vector<std::uint8_t>& allowed, Skip skip) {
  if (states.size() < index.max_bytes + 1) states.assign(index.max_bytes + 1, start);
  states[0] = start;
  std::size_t have = 0;
  std::int64_t failed = -1;
  std::uint32_t shared = 0;
  for (std::size_t i = 0; i < index.sorted.size(); ++i) {
    const std::int32_t id = index.sorted[i];
    const auto at = static_cast<std::size_t>(id);
    shared = std::min(shared, index.lcp[i]);
    const std::string_view b = index.sorted_bytes(i);
    if (skip(at, b)) {
      if (id < vocab) allowed[at] = 1;
      continue;
    }
    const std::size_t common = shared;
    shared = UINT32_MAX;
    if (failed >= 0 && static_cast<std::int64_t>(common) > failed) continue;
    failed = -1;
    std::size_t d = std::min(common, have);
    for (; d < b.size(); ++d) {
      states[d + 1] = states[d];
      if (!states[d + 1].feed(static_cast<unsigned char>(b[d]))) {
        failed = static_cast<std::int64_t>(d);
        break;
      }
    }
    have = d;
    if (failed < 0 && id < vocab) allowed[at] = 1;
  }
}

}  // namespace staticlm
