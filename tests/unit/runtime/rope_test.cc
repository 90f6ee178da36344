#include "runtime/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/error.h"

namespace staticlm {
namespace {

struct Tables {
  std::vector<float> cos, sin;
};

Tables tables(const std::vector<float>& inv, std::int64_t first, std::int64_t count, RopeSine sine) {
  const std::size_t n = static_cast<std::size_t>(count) * inv.size() * 2;
  Tables t{std::vector<float>(n), std::vector<float>(n)};
  build_rope_table(inv, first, count, sine, t.cos, t.sin);
  return t;
}

TEST(RopeInvFreq, DefaultMatchesClosedForm) {
  const auto inv = rope_inv_freq(10000.0, 256, 256);
  ASSERT_EQ(inv.size(), 128u);
  for (int i = 0; i < 128; ++i) {
    const double expect = 1.0 / std::pow(10000.0, 2.0 * i / 256.0);
    EXPECT_NEAR(inv[i], expect, 2e-7 * expect) << i;
  }
  EXPECT_EQ(inv[0], 1.0f);
}

// E2B full layers: head_dim 512, partial_rotary_factor 0.25 -> 128 rotary dims, 64 angles whose
// exponent uses the whole 512 (not 128), then 192 zero frequencies.
TEST(RopeInvFreq, ProportionalUsesTheWholeHeadDim) {
  const auto inv = rope_inv_freq(1e6, 512, 128);
  ASSERT_EQ(inv.size(), 256u);
  for (int i = 0; i < 64; ++i) {
    const double expect = 1.0 / std::pow(1e6, 2.0 * i / 512.0);
    EXPECT_NEAR(inv[i], expect, 2e-7 * expect) << i;
  }
  for (int i = 64; i < 256; ++i) EXPECT_EQ(inv[i], 0.0f) << i;
}

TEST(RopeInvFreq, BadDimsAreRefused) {
  EXPECT_THROW(rope_inv_freq(1e4, 15, 15), Error);
  EXPECT_THROW(rope_inv_freq(1e4, 16, 18), Error);
  EXPECT_THROW(rope_inv_freq(1e4, 16, 3), Error);
}

TEST(RopeTable, AnglesAndHalves) {
  const auto inv = rope_inv_freq(10000.0, 16, 16);
  const auto t = tables(inv, 0, 50, RopeSine::kHf);
  for (int p = 0; p < 50; ++p) {
    for (int i = 0; i < 8; ++i) {
      const double angle = static_cast<double>(static_cast<float>(p) * inv[i]);
      EXPECT_NEAR(t.cos[p * 16 + i], std::cos(angle), 1e-7);
      EXPECT_NEAR(t.sin[p * 16 + i], std::sin(angle), 1e-7);
      EXPECT_EQ(t.cos[p * 16 + i], t.cos[p * 16 + 8 + i]);  // emb = concat(freqs, freqs)
      EXPECT_EQ(t.sin[p * 16 + i], t.sin[p * 16 + 8 + i]);
    }
  }
  // Position 0: the identity rotation.
  for (int d = 0; d < 16; ++d) {
    EXPECT_EQ(t.cos[d], 1.0f);
    EXPECT_EQ(t.sin[d], 0.0f);
  }
}

// A table that starts at position p equals rows p.. of a table from 0 (decode uses row past_len).
TEST(RopeTable, OffsetEqualsSlice) {
  const auto inv = rope_inv_freq(1e6, 32, 8);
  const auto all = tables(inv, 0, 70, RopeSine::kPreNegatedSin);
  const auto one = tables(inv, 63, 1, RopeSine::kPreNegatedSin);
  for (int d = 0; d < 32; ++d) {
    EXPECT_EQ(one.cos[d], all.cos[63 * 32 + d]);
    EXPECT_EQ(one.sin[d], all.sin[63 * 32 + d]);
  }
}

// Proportional: the non-rotating dims have cos 1 and sin 0 at every position.
TEST(RopeTable, ProportionalNopeDimsAreIdentity) {
  const auto inv = rope_inv_freq(1e6, 32, 8);
  const auto t = tables(inv, 0, 40, RopeSine::kHf);
  for (int p = 0; p < 40; ++p) {
    for (int i = 4; i < 16; ++i) {
      for (int half = 0; half < 2; ++half) {
        EXPECT_EQ(t.cos[p * 32 + half * 16 + i], 1.0f);
        EXPECT_EQ(t.sin[p * 32 + half * 16 + i], 0.0f);
      }
    }
  }
}

// pre_negated_sin negates the first half of sin once and leaves cos and the second half alone.
TEST(RopeTable, PreNegatedSinNegatesTheFirstHalfOnce) {
  const auto inv = rope_inv_freq(10000.0, 16, 16);
  const auto hf = tables(inv, 0, 20, RopeSine::kHf);
  const auto pre = tables(inv, 0, 20, RopeSine::kPreNegatedSin);
  EXPECT_EQ(hf.cos, pre.cos);
  for (int p = 0; p < 20; ++p) {
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(pre.sin[p * 16 + i], -hf.sin[p * 16 + i]);
      EXPECT_EQ(pre.sin[p * 16 + 8 + i], hf.sin[p * 16 + 8 + i]);
    }
  }
}


TEST(RopeTable, WrongBufferSizeIsRefused) {
  const auto inv = rope_inv_freq(10000.0, 16, 16);
  std::vector<float> c(15), s(16);
  EXPECT_THROW(build_rope_table(inv, 0, 1, RopeSine::kHf, c, s), Error);
}

// Layers share a table exactly when their inverse frequencies are equal: E2B's pattern of four
// sliding layers then a full one gives two tables, each first held by the first layer of its kind.
TEST(RopeTables, LayersWithEqualFrequenciesShareOne) {
  std::vector<LayerInfo> layers(7);
  std::vector<std::vector<float>> inv;
  for (int i = 0; i < 7; ++i) {
    layers[static_cast<std::size_t>(i)].index = i;
    const bool full = i % 5 == 4;
    inv.push_back(full ? rope_inv_freq(1e6, 32, 8) : rope_inv_freq(1e4, 16, 16));
  }
  const RopeTableMap m = distinct_rope_tables(inv, layers);
  EXPECT_EQ(m.first_layer, (std::vector<int>{0, 4}));
  EXPECT_EQ(m.table_of, (std::vector<std::size_t>{0, 0, 0, 0, 1, 0, 0}));
  // Same head_dim, another theta: a table of its own.
  inv[6] = rope_inv_freq(5e5, 16, 16);
  const RopeTableMap m2 = distinct_rope_tables(inv, layers);
  EXPECT_EQ(m2.first_layer, (std::vector<int>{0, 4, 6}));
  EXPECT_EQ(m2.table_of[6], 2u);
}

}  // namespace
}  // namespace staticlm
