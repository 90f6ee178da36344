// Applies host-built RoPE tables to query or key heads, in the sine convention of the graphs
// (staticlm/backend.h RopeSine). Halves are split NeoX style: pairs (j, j + hd/2).
#pragma once

#include <cstdint>

#include "staticlm/backend.h"

namespace staticlm::cpu {

// x [rows, heads, hd] in place; cos, sin [rows, hd] (one row per token, shared by its heads).
void apply_rope(float* x, std::int64_t rows, std::int64_t heads, std::int64_t hd, const float* cos,
                const float* sin, RopeSine sine);

}  // namespace staticlm::cpu
