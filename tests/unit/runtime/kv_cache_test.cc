#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "base/error.h"

namespace staticlm {
namespace {

// A layer table shaped like the tiny preset: [s, s, f, s, s, f], the last two layers read K/V
// from layers 3 (sliding) and 2 (full). Built by hand so the test does not depend on the config code.
std::vector<LayerInfo> tiny_layers() {
  std::vector<LayerInfo> t;
  const bool full[6] = {false, false, true, false, false, true};
  for (int i = 0; i < 6; ++i) {
    LayerInfo l;
    l.index = i;
    l.sliding = !full[i];
    l.type = full[i] ? "full_attention" : "sliding_attention";
    l.head_dim = full[i] ? 8 : 4;
    l.num_heads = 2;
    l.num_kv_heads = 2;
    l.owns_kv = i < 4;
    l.kv_source = i == 4 ? 3 : i == 5 ? 2 : i;
    l.stores_shared_kv = i == 2 || i == 3;
    t.push_back(l);
  }
  return t;
}

std::vector<float> iota_f(std::size_t n, float start) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(KvCache, OneBufferPerOwningLayer) {
  KvCache c(tiny_layers(), 10);
  EXPECT_EQ(c.owned_layers(), 4);
  EXPECT_EQ(c.capacity(), 9);
  EXPECT_EQ(c.shape(0), (Shape{1, 2, 9, 4}));
  EXPECT_EQ(c.shape(2), (Shape{1, 2, 9, 8}));
  EXPECT_FALSE(c.owns(4));
  EXPECT_FALSE(c.owns(5));
  EXPECT_THROW(c.k(4), Error);
  EXPECT_TRUE(c.has_mirror(2));
  EXPECT_FALSE(c.has_mirror(0));
  EXPECT_EQ(c.mirror_shape(3), (Shape{1, 2, 10, 4}));
}

// E2B: 35 layers, the last 20 shared -> 15 owning layers (30 buffers).
TEST(KvCache, E2bHasFifteenLayers) {
  std::vector<LayerInfo> t(35);
  for (int i = 0; i < 35; ++i) {
    t[i].index = i;
    t[i].head_dim = (i % 5 == 4) ? 512 : 256;
    t[i].num_kv_heads = 1;
    t[i].owns_kv = i < 15;
    t[i].stores_shared_kv = i == 13 || i == 14;
  }
  KvCache c(t, 8);
  EXPECT_EQ(c.owned_layers(), 15);
  EXPECT_EQ(c.bytes(), 4 * 2 * (int64_t{12} * 256 * 7 + 3 * 512 * 7 + 256 * 8 + 512 * 8));
}

TEST(KvCache, PrefillWritesValidRowsOnly) {
  KvCache c(tiny_layers(), 10);
  const std::int64_t s = 6, hd = 4;
  const auto k = iota_f(2 * s * hd, 1.0f), v = iota_f(2 * s * hd, 1000.0f);
  c.write_prefill(0, k, v, s, 4);
  const auto ck = c.k(0), cv = c.v(0);
  for (int h = 0; h < 2; ++h) {
    for (int slot = 0; slot < 9; ++slot) {
      for (int d = 0; d < hd; ++d) {
        const float expect_k = slot < 4 ? k[(h * s + slot) * hd + d] : 0.0f;
        const float expect_v = slot < 4 ? v[(h * s + slot) * hd + d] : 0.0f;
        EXPECT_EQ(ck[(h * 9 + slot) * hd + d], expect_k) << h << " " << slot << " " << d;
        EXPECT_EQ(cv[(h * 9 + slot) * hd + d], expect_v);
      }
    }
  }
}

TEST(KvCache, PrefillMustLeaveADecodeSlot) {
  KvCache c(tiny_layers(), 6);
  const auto k = iota_f(2 * 6 * 4, 0.0f);
  try {
    c.write_prefill(0, k, k, 6, 6);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("must reserve one decode slot"), std::string::npos) << e.what();
  }
}

TEST(KvCache, DecodeWritesAtPastLenAndStopsWhenFull) {
  KvCache c(tiny_layers(), 5);
  const auto k = iota_f(2 * 4, 1.0f), v = iota_f(2 * 4, 50.0f);
  c.write_decode(1, k, v, 2);
  for (int h = 0; h < 2; ++h) {
    for (int d = 0; d < 4; ++d) {
      EXPECT_EQ(c.k(1)[(h * 4 + 2) * 4 + d], k[h * 4 + d]);
      EXPECT_EQ(c.v(1)[(h * 4 + 2) * 4 + d], v[h * 4 + d]);
      EXPECT_EQ(c.k(1)[(h * 4 + 1) * 4 + d], 0.0f);
    }
  }
  c.write_decode(1, k, v, 3);  // the last of the 4 slots
  try {
    c.write_decode(1, k, v, 4);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("the cache is full"), std::string::npos) << e.what();
  }
}

// The donor's mirror equals cat(cache, current row): the decode consumers' shared_key_value.
TEST(KvCache, MirrorIsCacheThenCurrentRow) {
  KvCache c(tiny_layers(), 6);
  const std::int64_t hd = 8;
  const auto pk = iota_f(2 * 6 * hd, 1.0f), pv = iota_f(2 * 6 * hd, -500.0f);
  c.write_prefill(2, pk, pv, 6, 3);
  const auto nk = iota_f(2 * hd, 900.0f), nv = iota_f(2 * hd, 700.0f);
  c.set_mirror_current(2, nk, nv);
  c.write_decode(2, nk, nv, 3);
  const auto mk = c.mirror_k(2), mv = c.mirror_v(2), ck = c.k(2), cv = c.v(2);
  for (int h = 0; h < 2; ++h) {
    for (int slot = 0; slot < 5; ++slot) {
      for (int d = 0; d < hd; ++d) {
        EXPECT_EQ(mk[(h * 6 + slot) * hd + d], ck[(h * 5 + slot) * hd + d]);
        EXPECT_EQ(mv[(h * 6 + slot) * hd + d], cv[(h * 5 + slot) * hd + d]);
      }
    }
    for (int d = 0; d < hd; ++d) {
      EXPECT_EQ(mk[(h * 6 + 5) * hd + d], nk[h * hd + d]);
      EXPECT_EQ(mv[(h * 6 + 5) * hd + d], nv[h * hd + d]);
    }
  }
  EXPECT_EQ(ck[(1 * 5 + 3) * hd + 2], nk[hd + 2]);
  c.reset();
  EXPECT_EQ(c.k(2)[(1 * 5 + 3) * hd + 2], 0.0f);
  EXPECT_EQ(c.mirror_k(2)[5 * hd], 0.0f);
}

TEST(KvCache, WrongRowSizeIsRefused) {
  KvCache c(tiny_layers(), 6);
  std::vector<float> k(7);
  try {
    c.write_decode(0, k, k, 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected [1, 2, 1, 4]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace staticlm
