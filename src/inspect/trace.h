// A Trace: every tensor the inspector's eight steps compare (spec/static-runtime.md (e)), as one
// side computed it: the static pipeline, an independent dynamic execution, another checkpoint,
// or Hugging Face's dump. A field left empty means "this side did not produce it" (a golden file
// without the tensor, or a text-only prompt for the image steps).
//
// Value type; row-major float/int vectors, T = prompt length, D = hidden size, S = max_seq.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace staticlm::inspect {

struct Trace {
  std::string source;  // "static", "dynamic", "model:DIR", "golden:FILE"

  // Step 1: the processor's unpadded ids [T] (image placeholders kept), and its image inputs.
  std::vector<std::int64_t> input_ids;
  std::vector<float> pixel_values;             // [N * 3p^2]
  std::vector<std::int64_t> image_position_ids;  // [N * 2]

  // Step 2: embed(ids, placeholders -> pad) * sqrt(D) [T, D] and the combined PLE input [T, L*P].
  std::vector<float> token_embeddings, per_layer_inputs;
  // Step 3: the soft tokens [N, D], and (when available) each vision encoder layer's output.
  std::vector<float> image_features;
  std::vector<std::vector<float>> vision_layers;
  // Step 4: the decoder's input after the image rows are put in [T, D].
  std::vector<float> inputs_embeds;
  // Step 5, per decoder layer: which keys each of the T queries may see ([T, S], 1 = allowed;
  // keys at and past T never are), and the RoPE tables cos, sin [T, hd] in Hugging Face's
  // convention (sin not negated).
  std::vector<std::vector<std::uint8_t>> mask_allowed;
  std::vector<std::vector<float>> rope_cos, rope_sin;

  // Step 6: soft-capped logits after the last prompt token [V] and each layer's output [T, D].
  std::vector<float> prefill_logits;
  std::vector<std::vector<float>> prefill_hidden;
  // Step 7: tokens fed one by one, the logits each gives [V] and each layer's output [D].
  std::vector<std::int64_t> decode_tokens;
  std::vector<std::vector<float>> decode_logits;
  std::vector<std::vector<std::vector<float>>> decode_hidden;  // [step][layer][D]
  // Step 8: greedy tokens (no EOS stop), and for each the top-2 margin of the logits that chose
  // it (a choice within the two sides' numerical noise is a near-tie, not a failure).
  std::vector<std::int64_t> generated;
  std::vector<float> generated_margin;
};

}  // namespace staticlm::inspect
