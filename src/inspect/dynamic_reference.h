// DynamicReference: an independent forward pass of a Gemma 4 checkpoint with dynamic shapes, the
// reference `staticlm inspect --reference dynamic` holds the static runtime against. It runs the
// model as Hugging Face does (spec/gemma4.md 2-4): the prompt unpadded (T rows only), the image
// encoded from its valid patches and its soft tokens scattered where input_ids == image_token_id,
// a KV cache that grows by the rows it is given, masks as a predicate on (query, key) positions,
// and RoPE tables computed in double from the config.
//
// Independence: it shares with the static path only the weight gathering (cpu::load_text_weights,
// cpu::load_vision_weights), the low-level kernels (matmul, rms_norm, embedding lookup, the gated
// GELU) and cpu::run_vision_tower run on the valid patches alone. Masks, RoPE, attention, the
// decoder layer, PLE, the KV cache and its sharing, the head and the soft-capping are its own.
//
// Ownership: the reference borrows the Checkpoint (its memory-mapped weights) and the thread pool;
// both must outlive it. It owns its cache and the intermediates of the last prefill. Not
// thread-safe: one call at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/text_weights.h"
#include "backends/cpu/vision_weights.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"

namespace staticlm::inspect {

struct DynamicOptions {
  ThreadPool* pool = nullptr;    // borrowed; null runs on the calling thread
  bool bf16_activations = true;  // same meaning as CpuBackendOptions::bf16_activations
};

struct DynamicPrompt {
  std::vector<std::int64_t> input_ids;               // [T] unpadded, image placeholder ids kept
  std::span<const float> pixel_values;               // [num_patches * 3p^2] or empty (text only)
  std::span<const std::int64_t> image_position_ids;  // [num_patches * 2], (x, y); (-1,-1) padding patches
};

// One forward: a prefill of T rows or a decode of 1 row.
struct DynamicStep {
  std::vector<float> logits;               // [V] soft-capped, for the last row
  std::vector<std::vector<float>> hidden;  // per decoder layer i: its output hidden state [rows * D]
};

class DynamicReference {
 public:
  // Gathers the text weights (and the vision weights when the config has a vision tower);
  // kInvalidFile naming a missing or misshapen tensor, kUnsupported for a "default" RoPE with a
  // partial_rotary_factor other than 1.
  static std::unique_ptr<DynamicReference> create(const Checkpoint& checkpoint, const DynamicOptions& options = {});

  // Starts over: embeds, encodes the image (when pixel values are given), scatters, runs all
  // layers on T rows. kInvalidArgument (one line naming the value) for: empty ids, an id outside
  // [0, vocab_size), pixel values without a vision tower, pixel / position sizes that disagree,
  // and (multimodal checkpoints) an image placeholder count other than the number of image
  // features (0 without pixel values); kOutOfRange past max_position_embeddings.
  DynamicStep prefill(const DynamicPrompt& prompt);
  // Appends one token at position past_len(); returns its step. kInvalidArgument before a
  // prefill or for an id outside the vocabulary.
  DynamicStep decode(std::int64_t token);
  std::int64_t past_len() const { return past_len_; }

  // Intermediates of the last prefill (empty before one).
  const std::vector<float>& token_embeddings() const { return token_embeddings_; }  // [T, D] embed(ids') * sqrt(D)
  const std::vector<float>& per_layer_inputs() const { return per_layer_inputs_; }  // [T, L*P]; empty when P == 0
  const std::vector<float>& image_features() const { return image_features_; }      // [N, D]; empty without image
  // Each vision encoder layer's output over the valid patches [valid, Dv]; empty without image.
  const std::vector<std::vector<float>>& vision_layer_outputs() const { return vision_layers_; }
  const std::vector<float>& inputs_embeds() const { return inputs_embeds_; }        // [T, D] after the scatter

  // RoPE of decoder layer `layer` for positions 0..n-1 as HF builds it (concat(freqs, freqs)),
  // computed in double then rounded: cos, sin [n, head_dim(layer)].
  void rope_tables(int layer, std::int64_t n, std::vector<float>& cos, std::vector<float>& sin) const;
  // Whether query position q may attend key position k in decoder layer `layer`: causal, and on
  // sliding layers within the window (q - k < sliding_window, HF's rule).
  bool attends(int layer, std::int64_t q, std::int64_t k) const;

 private:
  DynamicReference(const Checkpoint& checkpoint, const DynamicOptions& options);

  // RoPE rows for positions start..start+n-1 into cos, sin [n, hd].
  void rope_rows(int layer, std::int64_t start, std::int64_t n, std::vector<float>& cos,
                 std::vector<float>& sin) const;
  // ids with the multimodal placeholders replaced by the pad id (multimodal checkpoints only).
  std::vector<std::int64_t> lookup_ids(std::span<const std::int64_t> ids) const;
  // Token-identity PLE plus the context projection of `embeds` [n, D] -> [n, L*P].
  std::vector<float> combine_per_layer_inputs(std::span<const std::int64_t> lookup, const std::vector<float>& embeds,
                                              std::int64_t n) const;
  // The N image soft tokens [N, D] of the valid patches.
  std::vector<float> encode_image(std::span<const float> pixels, std::span<const std::int64_t> positions);
  // All decoder layers on n new rows at positions past_len_.., the cache grown by n; then the head.
  DynamicStep forward(std::vector<float> x, const std::vector<float>& ple, std::int64_t n);
  void decoder_layer(int i, std::int64_t n, const float* ple_rows, std::vector<float>& x);
  void check_id(std::int64_t id, const std::string& where) const;

  const Checkpoint& checkpoint_;
  DynamicOptions options_;
  cpu::CpuTextWeights text_;
  std::unique_ptr<cpu::CpuVisionWeights> vision_;  // when the config has a vision tower

  // Per decoder layer that owns K/V: K and V of every position so far, [past_len, kv_heads * hd].
  std::vector<std::vector<float>> cache_k_, cache_v_;
  std::int64_t past_len_ = 0;

  std::vector<float> token_embeddings_, per_layer_inputs_, image_features_, inputs_embeds_;
  std::vector<std::vector<float>> vision_layers_;
};

}  // namespace staticlm::inspect
