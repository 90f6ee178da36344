// Average pooling of vision patches by their grid positions (Gemma4VisionPooler, spec/gemma4.md
// 4.2): patch (x, y) falls into cell (x / k, y / k), cells are numbered row-major over a grid
// (pw / k) wide, where pw = max(x) + 1; a cell's value is the sum of its patches / k^2.
// Padding patches (position (-1, -1)) count as position (0, 0) with a zero vector, as upstream.
#pragma once

#include <cstdint>
#include <vector>

namespace staticlm::cpu {

// x [n, d], positions [n, 2] = (x, y). Writes the non-empty cells in cell order to out
// [cells, d] (out holds max_cells rows) and returns their count. Throws kInvalidArgument when
// more than max_cells cells are non-empty, a position is below -1 or k < 1.
std::int64_t pool_by_positions(const float* x, const std::int64_t* positions, std::int64_t n, std::int64_t d,
                               std::int64_t k, float* out, std::int64_t max_cells, std::vector<float>& scratch);

}  // namespace staticlm::cpu
