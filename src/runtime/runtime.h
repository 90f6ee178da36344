// Runtime: the host side of generation over a Backend. It owns the KV cache, the prefill and
// decode drivers and their buffers, and ties them to sampling and the generation loop
// (spec/static-runtime.md (b)). Everything dynamic (masks, RoPE, cache write-back, shared K/V,
// soft-capping, sampling) happens here; the backend only runs fixed-shape subgraphs.
//
// Ownership: the Runtime owns its state and buffers; it borrows the Backend, which must outlive
// it. One Runtime is one conversation: prefill() starts it over, append() continues it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/layer_table.h"
#include "runtime/appender.h"
#include "runtime/generation.h"
#include "runtime/masks.h"
#include "runtime/prefiller.h"
#include "runtime/runtime_state.h"
#include "runtime/token_generator.h"
#include "staticlm/backend.h"

namespace staticlm {

struct RuntimeOptions {
  float mask_fill_value = kDefaultMaskFill;  // the additive mask's "forbidden" value
  // Threads for the host's own per-step work (the soft-cap of every logit); null: the calling
  // thread. The back end's pool may serve: host and back end never run at the same time.
  ThreadPool* pool = nullptr;
};

class Runtime {
 public:
  // Checks that the backend implements every text subgraph of the contract for this model at
  // its profile (same tensors, dtypes and shapes; kInvalidArgument naming the first mismatch),
  // that the mask fill value is finite and negative, and refuses (kUnsupported) a model with
  // bidirectional attention (the runtime builds causal masks only).
  static std::unique_ptr<Runtime> create(Backend& backend, const ModelConfig& config,
                                         const std::vector<LayerInfo>& layers, const RuntimeOptions& options = {});

  // Prefill of a static input (right-padded to max_seq). Returns soft-capped logits [V] after
  // the last valid token; they stay valid until the next prefill or decode.
  std::span<const float> prefill(const PrefillInput& input);
  // Pads an unpadded prompt [T] (1 <= T <= max_seq-1) with the pad id, then prefill().
  std::span<const float> prefill_tokens(std::span<const std::int64_t> prompt);
  // Feeds one token at position past_len; returns the logits it predicts.
  std::span<const float> decode(std::int64_t token);

  // Append-prefill: feeds tokens at positions past_len.. through the append graphs, in chunks
  // of the smallest bucket that holds the rest (else the largest that fits), one decode step
  // where no bucket fits; returns the logits after the last token. On a fresh runtime (or after
  // rewind(0)) this is a bucketed prefill. Throws kInvalidArgument for no tokens, kOutOfRange
  // (nothing changed) when past_len + tokens > max_seq - 1.
  std::span<const float> append(std::span<const std::int64_t> tokens);
  // Starts over (cache cleared) and appends the prompt: prefill with the smallest bucket that
  // holds it instead of the max_seq graphs (the "prefill buckets").
  std::span<const float> prefill_bucketed(std::span<const std::int64_t> prompt);
  // Forgets every slot from past_len on (they are masked, then overwritten); 0 starts over.
  // kOutOfRange when past_len is negative or beyond the current one.
  void rewind(std::int64_t past_len);
  // The append buckets the backend implements (ascending).
  const std::vector<std::int64_t>& append_buckets() const { return appender_->buckets(); }
  // Appends `tokens` (the prefill step of the loop), then samples / decodes as generate().
  // `history`: every token in the context, `tokens` included (for the repetition penalty).
  GenerationResult generate_append(std::span<const std::int64_t> tokens, std::span<const std::int64_t> history,
                                   const GenerateOptions& options, const TokenCallback& on_token);

  // Prefill, then sample / stream / decode until a stop condition (runtime/generation.h).
  GenerationResult generate(const PrefillInput& input, const GenerateOptions& options, const TokenCallback& on_token);
  GenerationResult generate_tokens(std::span<const std::int64_t> prompt, const GenerateOptions& options,
                                   const TokenCallback& on_token);

  std::int64_t max_seq() const { return state_->max_seq; }
  std::int64_t past_len() const { return state_->past_len; }
  // Tokens decode() can still take: max_seq - 1 - past_len.
  std::int64_t remaining_capacity() const { return state_->max_seq - 1 - state_->past_len; }
  const KvCache& cache() const { return state_->cache; }
  // For restoring a saved conversation: the cache to fill, then set_past_len.
  KvCache& mutable_cache() { return state_->cache; }
  void set_restored(std::int64_t past_len);
  const ModelConfig& config() const { return state_->config; }

 private:
  Runtime() = default;
  std::vector<std::int64_t> padded_;
  std::unique_ptr<RuntimeState> state_;
  std::unique_ptr<Prefiller> prefiller_;    // borrows *state_
  std::unique_ptr<TokenGenerator> decoder_;  // borrows *state_
  std::unique_ptr<Appender> appender_;       // borrows *state_
};

}  // namespace staticlm
