// Random-weight Gemma 4 checkpoints in Hugging Face layout, for tests and benchmarks:
// config.json, generation_config.json, model.safetensors (exact tensor names and shapes),
// tokenizer.json + tokenizer_config.json (the real Gemma tokenizer renamed to the Gemma 4
// vocabulary), chat_template.jinja and the processor configs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "model/config.h"
#include "tensor/dtype.h"

namespace staticlm {

// "tiny": every structural rule of E2B (sliding/full pattern with a full last layer, KV
// sharing, double-wide MLP on shared layers, PLE, 2:1 head_dim split, the real vocabulary and
// the vision tower's patch 16 / pooling 3 / 280 soft tokens) at small widths.
// "e2b": the real E2B dimensions. Throws kInvalidArgument for another name.
ModelConfig preset_config(const std::string& preset, bool text_only);

// How make-model draws weights. Both: projections uniform with std 1/sqrt(fan_in), norm weights
// and layer scalars near 1. kUniform (the default, the one every fixture was made with) keeps
// q_norm / k_norm near 1 too, so attention scores (q . k, unscaled in Gemma 4) have std
// sqrt(head_dim): the softmax picks one key by a margin any rounding can flip, and errors grow
// chaotically layer by layer. kTame draws q_norm / k_norm weights near head_dim^-1/4, scores of
// std about 1 as in a trained model, so error measurements (quantization) mean something.
enum class WeightInit { kUniform, kTame };

struct MakeModelOptions {
  std::string preset = "tiny";
  std::uint64_t seed = 0;
  std::string out_dir;
  bool text_only = false;
  DType dtype = DType::kBF16;         // weight dtype: BF16 (as shipped), F16 or F32
  WeightInit init = WeightInit::kUniform;
  std::string gemma3_tokenizer_path;  // Gemma 3 tokenizer.json to derive the vocabulary from
  // Progress for long writes: (bytes written, bytes total). May be empty.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// Writes the checkpoint into out_dir (created if missing). Same options, same bytes.
void make_model(const MakeModelOptions& options);

}  // namespace staticlm
