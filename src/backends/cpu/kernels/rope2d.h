// 2-D rotary position embedding of the Gemma 4 vision encoder (spec/gemma4.md 4.2): the first
// half of each head is rotated by the patch column x, the second half by the patch row y, each
// half NeoX style inside itself (pairs (j, j + hd/4)), with per-axis inverse frequencies
// theta^(-2i / (hd/2)).
#pragma once

#include <cstdint>

namespace staticlm::cpu {

// positions [n, 2] = (x, y); cos, sin [n, hd] (hd divisible by 4):
//   cos[r] = concat(cos(x f), cos(x f), cos(y f), cos(y f)), f = inverse frequencies [hd/4].
void build_rope2d_tables(const std::int64_t* positions, std::int64_t n, std::int64_t hd, double theta, float* cos,
                         float* sin);

// x [n, heads, hd] in place with the tables above: within each quarter pair (a, b) of a half,
// (a, b) -> (a cos - b sin, b cos + a sin).
void apply_rope2d(float* x, std::int64_t n, std::int64_t heads, std::int64_t hd, const float* cos, const float* sin);

}  // namespace staticlm::cpu
