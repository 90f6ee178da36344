// Append-prefill (the Gemma 4 counterpart of TICO's Llama `append_prefill`): feeds up to Q new
// tokens at once at positions past_len .. past_len+count-1 through the
// decoder_layer_append_q{Q}_{i} graphs, against the fixed past cache. The host builds the
// [Q, max_seq] masks (runtime/masks.h build_append_mask) and the RoPE rows at the true
// positions, hands each K/V-owning layer its past slots [0, max_seq-Q), gives the shared-KV
// consumers cat(donor past, donor new rows), and writes only the valid rows of each K/V delta
// back at slots [past_len, past_len+count). Sliding-window and shared-KV rules are the same as in
// prefill and decode, so a conversation can cross turn boundaries anywhere.
//
// Ownership: owns its buffers (sized for the largest bucket once, at creation); borrows the
// RuntimeState it is given.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/rope.h"
#include "runtime/runtime_state.h"

namespace staticlm {

class Appender {
 public:
  explicit Appender(const RuntimeState& state);

  // The buckets whose graphs the backend has for every layer (ascending); may be empty.
  const std::vector<std::int64_t>& buckets() const { return buckets_; }

  // The bucket for the next chunk of `count` tokens at past_len: the smallest that holds them
  // all, else the largest that still fits (Q <= max_seq - past_len), else 0 (no bucket fits:
  // the caller decodes one token).
  std::int64_t pick_bucket(std::int64_t max_seq, std::int64_t past_len, std::int64_t count) const;

  // Runs tokens (1 .. q of them) through the bucket-q graphs at state.past_len, writes their
  // K/V back and advances past_len. Returns the soft-capped logits [V] after the last token
  // when want_logits, else an empty span. Throws kInvalidArgument for an unknown bucket or a
  // wrong count, kOutOfRange when the tokens do not fit (runtime/masks.h build_append_mask).
  std::span<const float> run(RuntimeState& state, std::int64_t q, std::span<const std::int64_t> tokens,
                             bool want_logits);

 private:
  std::vector<std::int64_t> buckets_;
  std::vector<std::int64_t> ids_;
  std::vector<float> hidden_, hidden_next_, ple_tokens_, ple_all_, ple_layer_, logits_;
  std::vector<float> mask_full_, mask_sliding_;
  std::vector<std::vector<float>> cos_, sin_;  // per distinct inverse-frequency list [Q, hd]
  RopeTableMap rope_;
  // New K/V [Hkv, Q, hd] per owning layer; consumers' cat(past, new) [Hkv, S, hd] per donor.
  std::vector<std::vector<float>> new_k_, new_v_, shared_k_, shared_v_;
  std::vector<float> past_k_, past_v_;  // staging for layers with several KV heads
};

}  // namespace staticlm
