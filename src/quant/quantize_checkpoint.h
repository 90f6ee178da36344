// `staticlm quantize`: a checkpoint directory rewritten with quantized weights (docs/
// quantization.md). Every rank-2 float tensor named *.weight (the linears, the tied embedding /
// LM head, the per-layer embedding table, the vision linears) is quantized; norms, scalars and
// the vision position table keep their dtype. q4 keeps a matrix whose input width is not a
// multiple of 32 as it was (counted in the report). The other files of the directory (config,
// tokenizer, processor, chat template) are copied; config.json gains
// "quantization_config": {"quant_method": "staticlm", "scheme": ...} and the safetensors
// metadata "staticlm_quantization". Writes are atomic; the same input gives identical bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace staticlm::quant {

struct QuantizeOptions {
  std::string model_dir;
  std::string out_dir;
  std::string scheme;  // "q8" or "q4"
  // Progress: bytes of input weights done and their total.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct QuantizeReport {
  int quantized = 0;  // tensors
  int kept = 0;       // tensors copied as they were
  std::uint64_t bytes_in = 0, bytes_out = 0;
};

// kInvalidArgument for an unknown scheme (naming the known ones), or an out_dir equal to
// model_dir; kUnsupported for npu-w4 (not implemented yet); checkpoint errors as Checkpoint::open.
QuantizeReport quantize_checkpoint(const QuantizeOptions& options);

}  // namespace staticlm::quant
