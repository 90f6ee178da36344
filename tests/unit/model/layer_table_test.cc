// The derived per-layer table against spec/gemma4.md 1.2 (E2B) and the upstream rules for
// other shapes (default layer pattern, no sharing, E4B-like sharing, proportional RoPE widths).
#include "model/layer_table.h"

#include <gtest/gtest.h>

#include <set>

#include "model_test_util.h"

namespace staticlm {
namespace {

// Spec 1.2, row by row.
TEST(LayerTable, E2BWholeTable) {
  const std::vector<LayerInfo> table = build_layer_table(test::e2b_config().text);
  ASSERT_EQ(table.size(), 35u);
  const std::set<int> full = {4, 9, 14, 19, 24, 29, 34};
  for (int i = 0; i < 35; ++i) {
    SCOPED_TRACE("layer " + std::to_string(i));
    const LayerInfo& L = table[i];
    const bool is_full = full.count(i) != 0;
    const bool own = i <= 14;
    EXPECT_EQ(L.index, i);
    EXPECT_EQ(L.type, is_full ? "full_attention" : "sliding_attention");
    EXPECT_EQ(L.sliding, !is_full);
    EXPECT_EQ(L.head_dim, is_full ? 512 : 256);
    EXPECT_EQ(L.num_heads, 8);
    EXPECT_EQ(L.num_kv_heads, 1);
    EXPECT_EQ(L.q_width, is_full ? 4096 : 2048);
    EXPECT_EQ(L.kv_width, own ? (is_full ? 512 : 256) : 0);
    EXPECT_EQ(L.intermediate_size, own ? 6144 : 12288);
    EXPECT_EQ(L.owns_kv, own);
    EXPECT_EQ(L.kv_source, own ? i : (is_full ? 14 : 13));
    EXPECT_EQ(L.stores_shared_kv, i == 13 || i == 14);
    EXPECT_EQ(L.rope_type, is_full ? "proportional" : "default");
    EXPECT_DOUBLE_EQ(L.rope_theta, is_full ? 1000000.0 : 10000.0);
    // Full: int(0.25 * 512 // 2) = 64 angles -> 128 rotated dims; sliding: all 256.
    EXPECT_EQ(L.rotary_dims, is_full ? 128 : 256);
  }
  EXPECT_EQ(first_kv_shared_layer(test::e2b_config().text), 15);
}

TEST(LayerTable, DefaultLayerTypes) {
  const std::string s = "sliding_attention", f = "full_attention";
  EXPECT_EQ(default_layer_types(0), std::vector<std::string>{});
  EXPECT_EQ(default_layer_types(1), (std::vector<std::string>{f}));
  EXPECT_EQ(default_layer_types(6), (std::vector<std::string>{s, s, s, s, s, f}));
  EXPECT_EQ(default_layer_types(8), (std::vector<std::string>{s, s, s, s, s, f, s, f}));
  EXPECT_EQ(default_layer_types(13), (std::vector<std::string>{s, s, s, s, s, f, s, s, s, s, s, f, f}));
}

TEST(LayerTable, PeriodicLayerTypes) {
  // E2B (spec 1.1): (["sliding_attention"] * 4 + ["full_attention"]) * 7.
  std::vector<std::string> e2b;
  for (int k = 0; k < 7; ++k) {
    for (int s = 0; s < 4; ++s) e2b.emplace_back("sliding_attention");
    e2b.emplace_back("full_attention");
  }
  EXPECT_EQ(periodic_layer_types(35, 5), e2b);
  EXPECT_EQ(periodic_layer_types(3, 1), (std::vector<std::string>(3, "full_attention")));
  EXPECT_EQ(periodic_layer_types(13, 6), default_layer_types(13));
  test::expect_error([] { periodic_layer_types(4, 0); }, ErrorKind::kInvalidArgument,
                     "periodic_layer_types: period must be positive, got 0");
}

TEST(LayerTable, NoSharing) {
  TextConfig t;  // class defaults: 30 layers, no KV sharing, 4 KV heads
  t.layer_types = default_layer_types(t.num_hidden_layers);
  t.rope_parameters = {{"sliding_attention", {"default", 10000.0, 1.0, 1.0}},
                       {"full_attention", {"proportional", 1000000.0, 0.25, 1.0}}};
  t.use_double_wide_mlp = true;  // has no effect without shared layers
  const auto table = build_layer_table(t);
  ASSERT_EQ(table.size(), 30u);
  for (const LayerInfo& L : table) {
    SCOPED_TRACE("layer " + std::to_string(L.index));
    EXPECT_TRUE(L.owns_kv);
    EXPECT_EQ(L.kv_source, L.index);
    EXPECT_FALSE(L.stores_shared_kv);
    EXPECT_EQ(L.intermediate_size, 9216);
    EXPECT_EQ(L.kv_width, 4 * L.head_dim);
    EXPECT_EQ(L.head_dim, (L.index + 1) % 6 == 0 || L.index == 29 ? 512 : 256);
  }
}

// E4B-like: 42 layers, 5:1 pattern, 18 shared: first shared 24, donors 22 (sliding) and 23 (full).
TEST(LayerTable, E4BLikeSharing) {
  TextConfig t;
  t.num_hidden_layers = 42;
  t.num_kv_shared_layers = 18;
  t.layer_types = default_layer_types(42);
  t.rope_parameters = {{"sliding_attention", {"default", 10000.0, 1.0, 1.0}},
                       {"full_attention", {"proportional", 1000000.0, 0.25, 1.0}}};
  const auto table = build_layer_table(t);
  for (const LayerInfo& L : table) {
    SCOPED_TRACE("layer " + std::to_string(L.index));
    EXPECT_EQ(L.owns_kv, L.index < 24);
    if (!L.owns_kv) {
      EXPECT_EQ(L.kv_source, L.sliding ? 22 : 23);
    }
    EXPECT_EQ(L.stores_shared_kv, L.index == 22 || L.index == 23);
    EXPECT_EQ(L.intermediate_size, 9216);  // use_double_wide_mlp is false
  }
}

// A donor is flagged only when some shared layer reads it.
TEST(LayerTable, DonorOnlyWhenRead) {
  TextConfig t;
  t.num_hidden_layers = 8;
  t.num_kv_shared_layers = 1;              // only layer 7 (full) is shared
  t.layer_types = default_layer_types(8);  // s s s s s f s f
  t.rope_parameters = {{"sliding_attention", {"default", 10000.0, 1.0, 1.0}},
                       {"full_attention", {"proportional", 1000000.0, 0.25, 1.0}}};
  const auto table = build_layer_table(t);
  EXPECT_EQ(table[7].kv_source, 5);
  for (const LayerInfo& L : table) EXPECT_EQ(L.stores_shared_kv, L.index == 5) << L.index;
}

TEST(LayerTable, ProportionalRotaryDimsRoundDown) {
  TextConfig t;
  t.num_hidden_layers = 2;
  t.global_head_dim = 64;
  t.layer_types = default_layer_types(2);
  // int(0.3 * 64 // 2) = int(19.2 // 2) = 9 angles -> 18 dims.
  t.rope_parameters = {{"sliding_attention", {"default", 10000.0, 1.0, 1.0}},
                       {"full_attention", {"proportional", 1000000.0, 0.3, 1.0}}};
  EXPECT_EQ(build_layer_table(t)[1].rotary_dims, 18);
}

TEST(LayerTable, ErrorsWithoutContextSayTextConfig) {
  TextConfig t;
  t.layer_types = {"sliding_attention"};
  test::expect_error([&] { build_layer_table(t); }, ErrorKind::kInvalidFile,
                     "text config: layer_types: has 1 entries, expected num_hidden_layers = 30");
}

}  // namespace
}  // namespace staticlm
