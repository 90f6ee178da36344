// `staticlm quantize`: a checkpoint directory rewritten with quantized weights (docs/
// quantization.md). Every rank-2 float tensor named *.weight (the linears, the tied embedding /
// LM head, the per-layer embedding table, the vision linears) is quantized; norms, scalars and
// the vision position table keep their dtype (npu-w4: rank <= 1 float tensors become F32). q4
// keeps a matrix whose input width is not a multiple of 32 as it was (counted in the report);
// npu-w4 writes U8 for the token embedding / LM head, the per-layer embedding table, the patch
// embedding and any matrix of odd width, U4 for every other linear. The other files of the directory (config,
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
  std::string scheme;  // "q8", "q4" or "npu-w4"
  // Progress: bytes of input weights done and their total.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  int threads = 1;  // rows of a chunk are quantized in parallel
};

struct QuantizeReport {
  int quantized = 0;  // tensors
  int kept = 0;       // tensors copied as they were
  std::uint64_t bytes_in = 0, bytes_out = 0;
};

// kInvalidArgument for an unknown scheme (naming the known ones), an out_dir equal to model_dir,
// or an input that is already quantized; checkpoint errors as Checkpoint::open.
QuantizeReport quantize_checkpoint(const QuantizeOptions& options);

}  // namespace staticlm::quant
