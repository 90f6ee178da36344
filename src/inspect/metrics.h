// The numbers the inspector and `replay` print for a tensor compared with its reference:
// max |d|, mean |d|, PEIR (spec/static-runtime.md (e): max |reference - actual| over the
// reference's range max - min, the range taken as 1 when it is 0), cosine similarity and the
// relative L2 error ||actual - reference|| / ||reference||, plus argmax and token agreement.
//
// A NaN or infinity on either side where the other is finite makes every metric NaN (and so
// fails any threshold): a broken graph must not hide behind an average.
#pragma once

#include <cstdint>
#include <span>

namespace staticlm::inspect {

struct DiffMetrics {
  std::int64_t count = 0;  // elements compared
  double max_abs = 0, mean_abs = 0, peir = 0, cosine = 1, rel_l2 = 0;
  bool finite() const;  // false when a metric is NaN (a non-finite value or a length mismatch)
};

// Throws kInvalidArgument when the lengths differ.
DiffMetrics compare(std::span<const float> actual, std::span<const float> reference);

// Index of the first maximum (as the greedy sampler picks); -1 for an empty span.
std::int64_t argmax(std::span<const float> x);

// The best logit minus the second best (0 for fewer than two): how firm a greedy choice is.
double top2_margin(std::span<const float> logits);

struct TokenAgreement {
  std::int64_t matched = 0;         // equal tokens over the first min(len) positions
  std::int64_t compared = 0;        // min(actual.size(), reference.size())
  std::int64_t first_mismatch = -1;  // first differing position, or the shorter length when
                                     // the lengths differ and the prefix agrees; -1 when equal
  double rate() const { return compared == 0 ? 1.0 : static_cast<double>(matched) / compared; }
};
TokenAgreement agree(std::span<const std::int64_t> actual, std::span<const std::int64_t> reference);

}  // namespace staticlm::inspect
