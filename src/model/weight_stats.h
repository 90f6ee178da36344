// What a checkpoint's stored weights cost and how they are stored, for `info` and `bench`: the
// bytes one decode step reads, the tensors per dtype, and the quantization scheme
// (docs/quantization.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace staticlm {

class Checkpoint;
class TensorStore;

// Bytes of weights one decode step reads: every text tensor once (the token embedding whole,
// since the tied LM head reads all of it), except the per-layer embedding table, of which it
// reads one row. A quantized matrix NAME counts with its companions NAME_scale and
// NAME_zero_point; the per-layer table's companions count their share of one row too.
// Needs the weights (kInvalidArgument when the checkpoint has none).
std::uint64_t decode_weight_bytes(const Checkpoint& ck);

// Number of tensors of each dtype ("BF16", "I8", ...), companions included.
std::map<std::string, int> weight_dtype_counts(const TensorStore& store);

// Weight matrices of whole cache lines (rank-2 tensors whose size is a nonzero multiple of 64
// bytes, every matrix of E2B) and how many start on a 64-byte boundary in memory (the file's
// offset, since the mapping is page-aligned). A decode GEMV streams rows that straddle cache
// lines slower (docs/quantization.md "Tensors on cache lines"); SafetensorsWriter puts every
// such tensor on a line.
struct MatrixAlignment {
  int matrices = 0;
  int on_cache_lines = 0;
};
MatrixAlignment matrix_alignment(const TensorStore& store);

// The scheme `staticlm quantize` wrote: config.json "quantization_config": {"scheme": ...},
// else the safetensors metadata "staticlm_quantization"; "none" when neither names one.
// kInvalidFile naming both when they disagree or the metadata names an unknown scheme (config.json's
// quantization_config is checked when it is parsed). Checkpoint::open calls it, so every command
// refuses such a directory.
std::string quantization_scheme(const Checkpoint& ck);

}  // namespace staticlm
