#include "runtime/masks.h"

#include <algorithm>
#include <string>

#include "base/error.h"

namespace staticlm {

namespace {

void check_window(std::optional<std::int64_t> window) {
  if (window && *window < 1) {
    invalid_argument("attention mask: sliding_window " + std::to_string(*window) + " must be at least 1");
  }
}

}  // namespace

void build_prefill_mask(std::span<float> out, std::int64_t seq_len, std::int64_t valid_len,
                        std::optional<std::int64_t> window, float fill) {
  check_window(window);
  if (seq_len < 1 || out.size() != static_cast<std::size_t>(seq_len * seq_len)) {
    invalid_argument("prefill mask: buffer of " + std::to_string(out.size()) + " floats, expected S*S for S = " +
                     std::to_string(seq_len));
  }
  if (valid_len < 0 || valid_len > seq_len) {
    invalid_argument("prefill mask: valid_len " + std::to_string(valid_len) + " outside [0, " +
                     std::to_string(seq_len) + "]");
  }
  for (std::int64_t q = 0; q < seq_len; ++q) {
    float* row = out.data() + q * seq_len;
    std::fill(row, row + seq_len, fill);
    // Allowed keys form one interval: [first, last].
    const std::int64_t last = std::min(q, valid_len - 1);
    const std::int64_t first = window ? std::max<std::int64_t>(0, q - *window + 1) : 0;
    for (std::int64_t k = first; k <= last; ++k) row[k] = 0.0f;
  }
}

void build_decode_mask(std::span<float> out, std::int64_t max_seq, std::int64_t past_len,
                       std::optional<std::int64_t> window, float fill) {
  check_window(window);
  if (max_seq < 2 || out.size() != static_cast<std::size_t>(max_seq)) {
    invalid_argument("decode mask: buffer of " + std::to_string(out.size()) + " floats, expected max_seq = " +
                     std::to_string(max_seq) + " (at least 2)");
  }
  if (past_len < 0 || past_len >= max_seq - 1) {
    out_of_range("decode mask: past_len " + std::to_string(past_len) + " outside [0, " +
                 std::to_string(max_seq - 1) + "): the decode cache is full");
  }
  std::fill(out.begin(), out.end(), fill);
  const std::int64_t first = window ? std::max<std::int64_t>(0, past_len - *window + 1) : 0;
  for (std::int64_t k = first; k < past_len; ++k) out[static_cast<std::size_t>(k)] = 0.0f;
  out[static_cast<std::size_t>(max_seq - 1)] = 0.0f;
}

void build_append_mask(std::span<float> out, std::int64_t max_seq, std::int64_t q, std::int64_t past_len,
                       std::int64_t count, std::optional<std::int64_t> window, float fill) {
  check_window(window);
  if (q < 1 || q > max_seq - 1 || out.size() != static_cast<std::size_t>(q * max_seq)) {
    invalid_argument("append mask: buffer of " + std::to_string(out.size()) + " floats for Q = " + std::to_string(q) +
                     ", expected Q*max_seq with Q in [1, max_seq-1] (max_seq " + std::to_string(max_seq) + ")");
  }
  if (count < 1 || count > q) {
    invalid_argument("append mask: " + std::to_string(count) + " new tokens, expected 1 to Q = " + std::to_string(q));
  }
  if (past_len < 0 || past_len > max_seq - q || past_len + count > max_seq - 1) {
    out_of_range("append mask: " + std::to_string(count) + " tokens after past_len " + std::to_string(past_len) +
                 " do not fit: the Q = " + std::to_string(q) + " graph holds " + std::to_string(max_seq - q) +
                 " past slots and max_seq " + std::to_string(max_seq) + " keeps one decode slot");
  }
  const std::int64_t tail = max_seq - q;
  for (std::int64_t i = 0; i < q; ++i) {
    float* row = out.data() + i * max_seq;
    std::fill(row, row + max_seq, fill);
    const std::int64_t r = std::min(i, count - 1);  // padding rows repeat the last real one
    const std::int64_t first = window ? std::max<std::int64_t>(0, past_len + r - *window + 1) : 0;
    for (std::int64_t k = first; k < past_len; ++k) row[k] = 0.0f;
    const std::int64_t first_new = window ? std::max<std::int64_t>(0, r - *window + 1) : 0;
    for (std::int64_t j = first_new; j <= r; ++j) row[tail + j] = 0.0f;
  }
}

}  // namespace staticlm
