// The vision-tower weights a CpuBackend reads (spec/gemma4.md 4.2-4.3), gathered once by name.
// Matrices are views into the caller's tensors (the memory-mapped checkpoint) or into aligned
// copies owned here; the norm vectors and the clip bounds are widened to f32 copies.
#pragma once

#include <cmath>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/matmul.h"
#include "backends/cpu/text_weights.h"
#include "model/config.h"

namespace staticlm::cpu {

// Gemma4ClippableLinear: y = clamp(clamp(x, in_min, in_max) W^T, out_min, out_max). Without
// use_clipped_linears the bounds are infinite.
struct ClippedLinear {
  WeightMatrix w;
  float input_min = -INFINITY, input_max = INFINITY, output_min = -INFINITY, output_max = INFINITY;
};

struct CpuVisionLayerWeights {
  ClippedLinear q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj;
  std::vector<float> q_norm, k_norm;  // [head_dim]
  std::vector<float> input_norm, post_attention_norm, pre_feedforward_norm, post_feedforward_norm;  // [Dv]
};

struct CpuVisionWeights {
  std::vector<std::unique_ptr<Tensor>> aligned_copies;  // owns the copies some matrices point into
  WeightMatrix input_proj;          // [Dv, 3 p^2]
  WeightMatrix position_table;      // [2 * position_embedding_size, Dv]: x rows, then y rows
  std::vector<CpuVisionLayerWeights> layers;
  WeightMatrix embedding_projection;       // [D, Dv]
};

// Throws kInvalidFile naming the tensor for a missing tensor, a wrong shape, a non-float dtype
// or a NaN clip bound; kUnsupported for standardize = true. config.vision must be set.
CpuVisionWeights load_vision_weights(const ModelConfig& config, const WeightGetter& get);

// Marks every BF16 matrix for bf16-activation GEMMs (CpuBackendOptions::bf16_activations).
void set_bf16_activations(CpuVisionWeights& w, bool on);

}  // namespace staticlm::cpu
