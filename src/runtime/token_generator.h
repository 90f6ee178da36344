// One decode step (spec/static-runtime.md (b) "decode_one", NEWER fixed-shape layout): embeds
// the token, builds the decode masks and the RoPE row for position past_len, runs every
// decoder_layer_decode_{i} with the full fixed past buffers (or, for shared-KV consumers, the
// donor's cat(past, current)), writes each new K/V row back at slot past_len, and returns the
// soft-capped logits.
//
// Ownership: owns its per-step buffers (allocated once); borrows the RuntimeState.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/rope.h"
#include "runtime/runtime_state.h"

namespace staticlm {

class TokenGenerator {
 public:
  explicit TokenGenerator(const RuntimeState& state);
  // The prepared calls point at this object's buffers.
  TokenGenerator(const TokenGenerator&) = delete;
  TokenGenerator& operator=(const TokenGenerator&) = delete;

  // Throws kInvalidArgument before a prefill, kOutOfRange ("the KV cache is full") when
  // past_len == max_seq - 1. Returns logits [V], valid until the next call.
  std::span<const float> step(RuntimeState& state, std::int64_t token);

 private:
  std::vector<float> hidden_, hidden_next_, ple_tokens_, ple_all_, logits_;
  std::vector<float> mask_full_, mask_sliding_;
  RopeTableMap rope_;
  std::vector<std::vector<float>> cos_, sin_;          // per table [hd]
  std::vector<std::vector<float>> delta_k_, delta_v_;  // per owning layer [Hkv, 1, hd]
  // One decoder_layer_decode_{i} call per layer: its name and its tensors' dtypes and shapes;
  // step() fills in the data pointers.
  struct LayerCall {
    std::string name;
    std::vector<TensorView> inputs;
    std::vector<TensorBuffer> outputs;
  };
  std::vector<LayerCall> calls_;
};

}  // namespace staticlm
