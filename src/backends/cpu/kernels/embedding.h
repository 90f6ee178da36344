// Embedding lookup: rows of a [vocab, width] table (bf16, f16 or f32, borrowed from the
// checkpoint) gathered by token id, converted to f32 and multiplied by a scale.
#pragma once

#include <cstdint>
#include <span>

#include "backends/cpu/kernels/matmul.h"

namespace staticlm::cpu {

// out [ids.size(), table.cols] = table[ids] * scale. Throws kOutOfRange naming the id and the
// vocabulary size for an id outside [0, table.rows).
void embedding_lookup(const WeightMatrix& table, std::span<const std::int64_t> ids, float scale, float* out);

}  // namespace staticlm::cpu
