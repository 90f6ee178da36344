// Additive attention masks the host builds for the decoder-layer subgraphs
// (spec/static-runtime.md (c), the NEWER fixed-shape layout): 0 where a query may attend to a
// key, `fill` where it may not. Prompts are right-padded, so key validity is `k < valid_len`.
// The caller owns every buffer; nothing here allocates.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace staticlm {

// The mask fill the exported graphs were traced with (PTQConfig.attention_mask_fill_value).
inline constexpr float kDefaultMaskFill = -120.0f;

// Prefill mask [1, 1, S, S], row-major (q, k):
//   full:    allowed(q, k) = k <= q && k < valid_len
//   sliding: allowed(q, k) = k <= q && k > q - window && k < valid_len
// `window` is set for sliding layers. Padded query rows are not masked themselves (each still
// sees the valid keys before it), so no row is all `fill` unless valid_len is 0.
// Throws kInvalidArgument when out.size() != S*S, valid_len is outside [0, S] or window < 1.
void build_prefill_mask(std::span<float> out, std::int64_t seq_len, std::int64_t valid_len,
                        std::optional<std::int64_t> window, float fill);

// Decode mask [1, 1, max_seq]: key slots [0, max_seq-2] hold the cache, slot max_seq-1 the
// current token (whose position is past_len).
//   full:    slots [0, past_len) and max_seq-1 allowed
//   sliding: slots [max(0, past_len - window + 1), past_len) and max_seq-1 allowed
// Throws kOutOfRange when past_len is outside [0, max_seq-1) (the cache is full at
// max_seq-1), kInvalidArgument for a wrong out.size() or window < 1.
void build_decode_mask(std::span<float> out, std::int64_t max_seq, std::int64_t past_len,
                       std::optional<std::int64_t> window, float fill);

// Append-prefill mask [1, 1, Q, max_seq] for `count` new tokens (1 <= count <= Q) at positions
// past_len .. past_len+count-1. Key slots [0, max_seq-Q) hold the past cache, slot max_seq-Q+j
// the new row j. Row i < count (position p = past_len + i):
//   full:    past slots [0, past_len) and new rows [0, i] allowed
//   sliding: past slots [max(0, p - window + 1), past_len) and new rows [max(0, i - window + 1), i]
// Rows i >= count (bucket padding) repeat row count-1, so no row is all `fill` and padded keys
// are never read. Throws kOutOfRange when the past does not fit the graph's past
// (past_len > max_seq - Q) or the tokens do not leave the decode slot (past_len + count >
// max_seq - 1); kInvalidArgument for a wrong out.size(), count outside [1, Q] or window < 1.
void build_append_mask(std::span<float> out, std::int64_t max_seq, std::int64_t q, std::int64_t past_len,
                       std::int64_t count, std::optional<std::int64_t> window, float fill);

}  // namespace staticlm
