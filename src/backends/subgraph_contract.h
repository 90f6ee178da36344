// The Gemma 4 subgraph contract (spec/static-runtime.md (d)) as data: every subgraph's name and
// fixed signature for a model and a profile, and the check that a call's tensors match. Any
// backend (the CPU one, a plug-in) publishes these same signatures; the host builds its buffers
// from them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/layer_table.h"
#include "staticlm/backend.h"

namespace staticlm {

inline constexpr const char* kTokenEmbedding = "token_embedding";
inline constexpr const char* kPleEmbedding = "ple_embedding";
inline constexpr const char* kPleProjection = "ple_projection";
inline constexpr const char* kVisionPrefill = "vision_prefill";
inline constexpr const char* kMultimodalFusion = "multimodal_fusion_prefill";
inline constexpr const char* kLmHead = "lm_head";
std::string decoder_layer_prefill_name(int layer);  // "decoder_layer_prefill_{i}"
std::string decoder_layer_decode_name(int layer);   // "decoder_layer_decode_{i}"
// "decoder_layer_append_q{Q}_{i}": the append-prefill graph of layer i for bucket Q.
std::string decoder_layer_append_name(int layer, std::int64_t q);

// Checks a list of append buckets: each in [1, max_seq - 1], strictly increasing.
// kInvalidArgument naming the offending value otherwise.
void check_append_lengths(const std::vector<std::int64_t>& lengths, std::int64_t max_seq);

// All subgraphs in prefill call order: [vision_prefill, multimodal_fusion_prefill when the
// profile has an image span and the model a vision tower], token_embedding, [ple_embedding,
// ple_projection when the PLE width is > 0], decoder_layer_prefill_{i} and
// decoder_layer_decode_{i} for every layer, decoder_layer_append_q{Q}_{i} for every bucket Q of
// profile.append_lengths and every layer, lm_head. Throws kInvalidArgument when max_seq < 2,
// the image span does not fit in max_seq, or a bucket is bad (check_append_lengths).
std::vector<SubgraphSignature> gemma4_subgraph_signatures(const ModelConfig& config,
                                                          const std::vector<LayerInfo>& layers,
                                                          const SubgraphProfile& profile);

// Checks a call against its signature: counts, dtypes, shapes (a dynamic axis may take any
// extent in [1, max], the same one in every tensor of the call that has a dynamic axis).
// Returns that extent (or -1 when the signature has no dynamic axis). Throws kInvalidArgument
// naming the subgraph, the tensor, and expected vs actual.
std::int64_t check_subgraph_call(const SubgraphSignature& sig, std::span<const TensorView> inputs,
                                 std::span<const TensorBuffer> outputs);

}  // namespace staticlm
