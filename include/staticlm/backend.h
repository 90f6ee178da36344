// The Backend interface: the fixed-shape subgraphs of spec/static-runtime.md (d), by their
// upstream names, each with a signature a caller can query, and one call that runs a subgraph
// on caller-owned buffers. A backend never sees the KV cache as a whole, never builds a mask
// and never sees a position id: the host (src/runtime/) owns all of that and hands each graph
// exactly the tensors its signature lists.
//
// Subgraphs (B = 1, S = max_seq, D = hidden, L = layers, P = PLE width, hd / Hkv per layer):
//   token_embedding            input_ids I64 [1,S*]                 -> inputs_embeds [1,S*,D]
//   ple_embedding              input_ids I64 [1,S*]                 -> per_layer_token_inputs [1,S*,L,P]
//   ple_projection             inputs_embeds [1,S*,D], per_layer_token_inputs [1,S*,L,P]
//                                                                   -> per_layer_inputs [1,S*,L,P]
//   vision_prefill             pixel_values [1,patches,3p^2]        -> image_embeds [N,D]
//   multimodal_fusion_prefill  text_embeds [1,S,D], visual_embeds [N,D] -> inputs_embeds [1,S,D]
//   decoder_layer_prefill_{i}  hidden_states [1,S,D], attention_mask [1,1,S,S], cos, sin [1,S,hd],
//                              per_layer_input [1,S,P], consumers: shared_key, shared_value [1,Hkv,S,hd]
//                              -> hidden_states [1,S,D], owners: new_key, new_value [1,Hkv,S,hd]
//   decoder_layer_decode_{i}   hidden_states [1,1,D], attention_mask [1,1,S], cos, sin [1,1,hd],
//                              per_layer_input [1,1,P], owners: past_key, past_value [1,Hkv,S-1,hd]
//                              | consumers: shared_key, shared_value [1,Hkv,S,hd]
//                              -> hidden_states [1,1,D], owners: new_key, new_value [1,Hkv,1,hd]
//   decoder_layer_append_q{Q}_{i}  (one per bucket Q of SubgraphProfile::append_lengths)
//                              hidden_states [1,Q,D], attention_mask [1,1,Q,S], cos, sin [1,Q,hd],
//                              per_layer_input [1,Q,P], owners: past_key, past_value [1,Hkv,S-Q,hd]
//                              | consumers: shared_key, shared_value [1,Hkv,S,hd] = cat(donor past
//                              [S-Q rows], donor new_key [Q rows])
//                              -> hidden_states [1,Q,D], owners: new_key, new_value [1,Hkv,Q,hd]
//                              Q new tokens at once against the fixed past cache: the K axis is
//                              [past slots 0..S-Q-1 | the Q new rows at S-Q..S-1]; the host builds
//                              the mask and the RoPE rows at the tokens' true positions and writes
//                              the K/V delta back (like decode, which is the Q = 1 case).
//   lm_head                    hidden_states [1,1,D]                -> logits [1,1,V] (not soft-capped)
// S* marks a dynamic axis (1 <= S* <= max_seq), as upstream exports token_embedding. All
// activations are F32. PLE graphs and inputs are absent when the PLE width is 0; vision graphs
// are absent for a text-only checkpoint.
//
// Ownership: the caller owns every input and output buffer; a backend only borrows them for the
// duration of run(). A backend owns (or borrows from an object that outlives it) its weights.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace staticlm {

// How a graph applies RoPE tables to x = [x1, x2] (halves of a head); the host must build the
// tables to match (runtime/rope.h):
//   kHf:            x*cos + [-x2, x1]*sin
//   kPreNegatedSin: x*cos + [x2, x1]*sin', the host having negated the first half of sin once.
enum class RopeSine { kHf, kPreNegatedSin };

// A writable caller-owned buffer (an output of a subgraph).
struct TensorBuffer {
  DType dtype = DType::kF32;
  Shape shape;
  void* data = nullptr;  // not owned
  TensorView view() const { return {dtype, shape, data}; }
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;            // fixed extents; a dynamic axis holds its largest extent
  int dynamic_axis = -1;  // an axis that may take any extent in [1, shape[axis]], or -1
};

struct SubgraphSignature {
  std::string name;
  std::vector<TensorSpec> inputs;   // in call order
  std::vector<TensorSpec> outputs;  // in call order
};

// What a set of exported graphs was built for; fixed when a backend is created.
struct SubgraphProfile {
  std::int64_t max_seq = 2048;
  RopeSine rope_sine = RopeSine::kPreNegatedSin;
  // The fixed image span [visual_start_idx, visual_start_idx + num_visual_tokens) and the
  // vision input shape, when the graphs include vision.
  std::optional<std::int64_t> visual_start_idx;
  std::int64_t num_visual_tokens = 0;
  std::int64_t num_patches = 0;         // 2520 for E2B
  std::int64_t patch_vector_size = 0;   // 3 * patch_size^2 = 768
  // The canonical patch grid (in patches) baked into vision_prefill: patch i < H*W sits at
  // (x, y) = (i % W, i / W), the rest are padding; pixel_values is the graph's only input.
  std::int64_t patch_grid_height = 0;
  std::int64_t patch_grid_width = 0;
  // Buckets Q of the append-prefill graphs decoder_layer_append_q{Q}_{i}: strictly increasing,
  // each in [1, max_seq-1]. Empty: no append graphs.
  std::vector<std::int64_t> append_lengths;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual const SubgraphProfile& profile() const = 0;
  // Every subgraph this backend runs, in the order a prefill calls them.
  virtual const std::vector<SubgraphSignature>& signatures() const = 0;

  // Runs one subgraph. inputs and outputs follow its signature's order; each must have the
  // signature's dtype and shape (a dynamic axis: any extent up to the maximum, the same in every
  // tensor of the call). Throws kInvalidArgument naming the subgraph and tensor on a mismatch or
  // an unknown name.
  virtual void run(const std::string& name, std::span<const TensorView> inputs,
                   std::span<const TensorBuffer> outputs) = 0;

  // Convenience lookups over signatures().
  const SubgraphSignature* find(const std::string& name) const;
  // Throws kInvalidArgument naming the subgraph when the backend has no such subgraph.
  const SubgraphSignature& signature(const std::string& name) const;
  bool has(const std::string& name) const { return find(name) != nullptr; }
};

}  // namespace staticlm
