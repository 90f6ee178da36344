// The text-model weights a CpuBackend reads, gathered once by name and checked against the
// layer table. Matrices are views into the caller's tensors (the memory-mapped checkpoint);
// only the small per-channel norm vectors and layer scalars are widened to f32 copies here, so
// kernels do not convert them on every row.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/kernels/matmul.h"
#include "backends/cpu/weight_loading.h"
#include "base/huge_pages.h"
#include "model/config.h"
#include "model/layer_table.h"

namespace staticlm::cpu {

struct CpuLayerWeights {
  WeightMatrix q_proj, k_proj, v_proj, o_proj;  // k/v empty for KV-shared layers
  std::vector<float> q_norm, k_norm;             // [hd]
  std::vector<float> input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;  // [D]
  WeightMatrix gate_proj, up_proj, down_proj;
  WeightMatrix ple_gate, ple_projection;  // [P, D], [D, P]; empty when P = 0
  std::vector<float> post_ple_norm;       // [D]
  float layer_scalar = 1.0f;
};

struct CpuTextWeights {
  std::vector<std::unique_ptr<Tensor>> aligned_copies;  // owns the copies some matrices point into
  std::unique_ptr<HugePageBuffer> resident;  // owns the streamed matrices once make_resident ran
  WeightMatrix embed_tokens;          // [V, D], also the tied LM head
  WeightMatrix embed_tokens_per_layer;  // [V_ple, L*P]
  WeightMatrix per_layer_model_projection;  // [L*P, D]
  std::vector<float> per_layer_projection_norm;  // [P]
  std::vector<float> final_norm;                 // [D]
  std::vector<CpuLayerWeights> layers;
};

// Throws kInvalidFile naming the tensor for a missing tensor, a wrong shape or a non-float dtype.
CpuTextWeights load_text_weights(const ModelConfig& config, const std::vector<LayerInfo>& layers,
                                 const WeightGetter& get);

// The matrices decode reads whole every step (resident_weights.h): the LM head, the per-layer
// projection and every layer's projections; not the per-layer embedding table.
std::vector<WeightMatrix*> streamed_matrices(CpuTextWeights& w);

// Marks every BF16 matrix for bf16-activation GEMMs (CpuBackendOptions::bf16_activations).
void set_bf16_activations(CpuTextWeights& w, bool on);

}  // namespace staticlm::cpu
