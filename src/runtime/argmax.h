// The largest logit and where it first occurs, in Highway (dispatched at run time): greedy
// decoding scans all 262144 logits every step, and std::max_element's compare-and-branch loop
// took 0.19 ms of a 21 ms E2B step.
#pragma once

#include <cstdint>
#include <span>

namespace staticlm {

struct MaxScan {
  float max = 0;            // the largest value, NaN ignored (-inf when there is none)
  bool non_finite = false;  // some value is NaN or +Inf
};

MaxScan scan_max(std::span<const float> x);

// The first index i with x[i] == v; x.size() when there is none.
std::int64_t first_index_of(std::span<const float> x, float v);

// The first index holding the largest value (torch.argmax's tie rule), NaN ignored; 0 when x is
// empty or holds only NaN.
std::int64_t argmax_first(std::span<const float> x);

}  // namespace staticlm
