// Prefill (spec/static-runtime.md (b) "prefill", NEWER): runs the prefill subgraphs over one
// right-padded static input of max_seq tokens, writes each K/V-owning layer's valid rows into
// the cache, hands the donor layers' full K/V to the shared-KV consumers, and returns the
// soft-capped logits after the last valid token.
//
// Ownership: the Prefiller owns its activation buffers (sized for max_seq once, at creation);
// it borrows the RuntimeState it is given.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/rope.h"
#include "runtime/runtime_state.h"
#include "runtime/static_inputs.h"

namespace staticlm {

struct PrefillInput {
  std::span<const std::int64_t> llm_input_ids;  // [max_seq], right-padded, image ids already the pad id
  std::int64_t valid_length = 0;                // real tokens, 1 .. max_seq-1
  std::span<const float> pixel_values;          // [1, patches, 3p^2] or empty (text only)
};

// The prefill input over built static inputs (which must outlive it); pixel values when they
// hold an image.
PrefillInput prefill_input(const StaticInputs& in);

// The bytes of the prefill masks a runtime holds: one [1, 1, S, S] f32 tensor for the full and
// one for the sliding layers (the allocation that grows as max_seq squared).
double prefill_mask_bytes(const std::vector<LayerInfo>& layers, std::int64_t max_seq);

class Prefiller {
 public:
  explicit Prefiller(const RuntimeState& state);

  // Resets the cache, runs every prefill subgraph, sets past_len = valid_length. Returns the
  // soft-capped logits [V] (valid until the next call). Throws kInvalidArgument for a wrong
  // ids length, kOutOfRange when valid_length leaves no decode slot (> max_seq-1) or is 0,
  // kUnsupported for pixel values without vision subgraphs.
  std::span<const float> run(RuntimeState& state, const PrefillInput& input);

 private:
  std::vector<float> hidden_, hidden_next_, ple_tokens_, ple_all_, ple_layer_, visual_, logits_;
  std::vector<float> mask_full_, mask_sliding_;
  // RoPE tables [S, hd], one pair per distinct inverse-frequency list (E2B: 2), not per layer.
  std::vector<std::vector<float>> cos_, sin_;
  RopeTableMap rope_;
  // New K/V [Hkv, S, hd]: donor layers keep their own pair (consumers read it later); the other
  // owning layers share slot 0, which only lives until its write-back.
  std::vector<std::vector<float>> new_k_, new_v_;
  std::vector<std::size_t> kv_slot_;  // per layer
};

}  // namespace staticlm
