#include "runtime/masks.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "base/error.h"

namespace staticlm {
namespace {

constexpr float kFill = -120.0f;

std::vector<float> decode_mask(std::int64_t max_seq, std::int64_t past_len, std::optional<std::int64_t> window) {
  std::vector<float> m(static_cast<std::size_t>(max_seq));
  build_decode_mask(m, max_seq, past_len, window, kFill);
  return m;
}

std::vector<float> prefill_mask(std::int64_t s, std::int64_t valid, std::optional<std::int64_t> window) {
  std::vector<float> m(static_cast<std::size_t>(s * s));
  build_prefill_mask(m, s, valid, window, kFill);
  return m;
}

// spec (c): past_len 10 of max_seq 64, full attention: past slots 0..9 and the current token's
// slot 63 are open, everything else is the fill value.
TEST(DecodeMask, FullPast10Of64) {
  const auto m = decode_mask(64, 10, std::nullopt);
  for (int k = 0; k < 64; ++k) {
    const bool allowed = k < 10 || k == 63;
    EXPECT_EQ(m[k], allowed ? 0.0f : kFill) << "slot " << k;
  }
}

// spec (c): window 32 at past_len 100 of 128: past slots 69..99 (W-1 = 31 of them) plus 127.
TEST(DecodeMask, SlidingWindow32AtPast100Of128) {
  const auto m = decode_mask(128, 100, 32);
  int open = 0;
  for (int k = 0; k < 128; ++k) {
    const bool allowed = (k >= 69 && k < 100) || k == 127;
    EXPECT_EQ(m[k], allowed ? 0.0f : kFill) << "slot " << k;
    open += m[k] == 0.0f;
  }
  EXPECT_EQ(open, 32);  // exactly `window` keys, the current token included
}

// spec (c): past_len 0: only the current token's slot.
TEST(DecodeMask, PastZeroOpensOnlyTheCurrentSlot) {
  for (std::optional<std::int64_t> w : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{4}}) {
    const auto m = decode_mask(16, 0, w);
    for (int k = 0; k < 16; ++k) EXPECT_EQ(m[k], k == 15 ? 0.0f : kFill) << "slot " << k;
  }
}

// The current token has position q = past_len: key position q-W is outside the window, q-W+1
// is the oldest key inside it.
TEST(DecodeMask, SlidingEdgePositions) {
  const std::int64_t w = 16, q = 40;
  const auto m = decode_mask(64, q, w);
  EXPECT_EQ(m[q - w], kFill);
  EXPECT_EQ(m[q - w + 1], 0.0f);
  EXPECT_EQ(m[q - 1], 0.0f);
  EXPECT_EQ(m[q], kFill);  // the slot the current token is written to after the step
}

TEST(PrefillMask, SlidingEdgePositions) {
  const std::int64_t s = 48, w = 16;
  const auto m = prefill_mask(s, s, w);
  for (std::int64_t q = w; q < s; ++q) {
    EXPECT_EQ(m[q * s + (q - w)], kFill) << "q " << q;
    EXPECT_EQ(m[q * s + (q - w + 1)], 0.0f) << "q " << q;
    EXPECT_EQ(m[q * s + q], 0.0f) << "q " << q;
  }
}

// Every entry against the predicate of spec (c), written out directly.
TEST(PrefillMask, MatchesTheSpecPredicate) {
  const std::int64_t s = 40;
  for (std::int64_t valid : {0, 1, 17, 40}) {
    for (std::optional<std::int64_t> w : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{1},
                                          std::optional<std::int64_t>{8}, std::optional<std::int64_t>{100}}) {
      const auto m = prefill_mask(s, valid, w);
      for (std::int64_t q = 0; q < s; ++q) {
        for (std::int64_t k = 0; k < s; ++k) {
          const bool allowed = k <= q && (!w || k > q - *w) && k < valid;
          ASSERT_EQ(m[q * s + k], allowed ? 0.0f : kFill) << "valid " << valid << " q " << q << " k " << k;
        }
      }
    }
  }
}

// Padded query rows still see the valid keys before them (no all-fill row).
TEST(PrefillMask, PaddedRowsAttendToValidKeys) {
  const auto m = prefill_mask(8, 3, std::nullopt);
  for (int q = 3; q < 8; ++q) {
    EXPECT_EQ(m[q * 8 + 0], 0.0f);
    EXPECT_EQ(m[q * 8 + 2], 0.0f);
    EXPECT_EQ(m[q * 8 + q], kFill);
  }
}

// The same quantity two ways: the decode mask at past_len p opens exactly the past keys that
// row p of a prefill mask over all-valid keys opens (k < p), plus the current token.
TEST(Masks, DecodeAgreesWithPrefillRow) {
  const std::int64_t max_seq = 32;
  for (std::optional<std::int64_t> w : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{5}}) {
    const auto pre = prefill_mask(max_seq, max_seq, w);
    for (std::int64_t p = 0; p < max_seq - 1; ++p) {
      const auto dec = decode_mask(max_seq, p, w);
      for (std::int64_t k = 0; k < p; ++k) EXPECT_EQ(dec[k], pre[p * max_seq + k]) << "p " << p << " k " << k;
      for (std::int64_t k = p; k < max_seq - 1; ++k) EXPECT_EQ(dec[k], kFill);
      EXPECT_EQ(dec[max_seq - 1], pre[p * max_seq + p]);
    }
  }
}

TEST(Masks, FillValueIsTheCallers) {
  std::vector<float> m(4);
  build_decode_mask(m, 4, 1, std::nullopt, -7.5f);
  EXPECT_EQ(m, (std::vector<float>{0.0f, -7.5f, -7.5f, 0.0f}));
}

TEST(Masks, FullCacheIsRefused) {
  std::vector<float> m(64);
  try {
    build_decode_mask(m, 64, 63, std::nullopt, kFill);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("past_len 63 outside [0, 63): the decode cache is full"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(build_decode_mask(m, 64, -1, std::nullopt, kFill), Error);
}

TEST(Masks, BadArgumentsAreRefused) {
  std::vector<float> m(15);
  EXPECT_THROW(build_prefill_mask(m, 4, 4, std::nullopt, kFill), Error);  // wrong size
  std::vector<float> p(16);
  EXPECT_THROW(build_prefill_mask(p, 4, 5, std::nullopt, kFill), Error);  // valid_len > S
  try {
    build_prefill_mask(p, 4, 4, 0, kFill);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding_window 0 must be at least 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace staticlm
