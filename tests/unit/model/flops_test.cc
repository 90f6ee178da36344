// model/flops.h against counts worked out by hand for the tiny preset (the runtime tests'
// model: vocabulary cut to 1000) and for E2B's vision tower, term by term.
#include "model/flops.h"

#include <gtest/gtest.h>

#include "model/make_model.h"

namespace staticlm {
namespace {

ModelConfig tiny_config() {
  ModelConfig c = preset_config("tiny", false);
  c.text.vocab_size = 1000;
  c.text.vocab_size_per_layer_input = 1000;
  return c;
}

TEST(Flops, AttentionPairs) {
  EXPECT_EQ(causal_attention_pairs(0, 4, true), 0);
  EXPECT_EQ(causal_attention_pairs(3, 16, false), 6);   // 1 + 2 + 3
  EXPECT_EQ(causal_attention_pairs(3, 16, true), 6);    // the window is wider than the prompt
  EXPECT_EQ(causal_attention_pairs(5, 2, true), 9);     // 1 + 2 + 2 + 2 + 2
  EXPECT_EQ(causal_attention_pairs(5, 2, false), 15);   // 1 + 2 + 3 + 4 + 5
}

// The tiny text model: D = 64, 6 layers, P = 16, V = 1000, 2 heads, 1 KV head, head_dim 16
// (sliding, layers 0 1 3 4) / 32 (full, layers 2 5), MLP 128, doubled to 256 on the KV-shared
// layers 4 and 5, which have no k/v projections. Multiply-adds per row:
//   layers 0, 1, 3: q 64*32 + k 64*16 + v 64*16 + o 32*64 + MLP 3*64*128 + PLE 2*64*16
//                   = 2048 + 1024 + 1024 + 2048 + 24576 + 2048 = 32768
//   layer 2:        q 64*64 + k 64*32 + v 64*32 + o 64*64 + 24576 + 2048 = 38912
//   layer 4:        q 64*32 + o 32*64 + MLP 3*64*256 + 2048 = 2048 + 2048 + 49152 + 2048 = 55296
//   layer 5:        q 64*64 + o 64*64 + 49152 + 2048 = 59392
//   sum:            3*32768 + 38912 + 55296 + 59392 = 251904
TEST(Flops, TinyPrefillThreeTokens) {
  const ModelConfig c = tiny_config();
  const std::vector<LayerInfo> layers = build_layer_table(c.text);
  ASSERT_EQ(layers.size(), 6u);
  ASSERT_EQ(layers[4].intermediate_size, 256);
  ASSERT_FALSE(layers[5].owns_kv);
  const std::int64_t linears = 2 * 3 * 251904;  // 1511424
  // 3 rows, window 16: 6 (query, key) pairs in every layer; 4 flops per pair, head and dim.
  const std::int64_t attention = 4 * (4 * 2 * 16 * 6) + 2 * (4 * 2 * 32 * 6);  // 3072 + 3072
  const std::int64_t ple_model_projection = 2 * 3 * 64 * (6 * 16);            // 36864
  const std::int64_t lm_head = 2 * 1000 * 64;                                 // 128000
  EXPECT_EQ(linears + attention + ple_model_projection + lm_head, 1682432);
  EXPECT_EQ(prefill_flops(c, layers, 3), 1682432);
}

// 20 rows cross the sliding window of 16: a sliding layer sees 1 + 2 + ... + 16 = 136 pairs for
// the first 16 queries and 16 for each of the last 4 (200); a full layer 20*21/2 = 210.
TEST(Flops, TinyPrefillPastTheSlidingWindow) {
  const ModelConfig c = tiny_config();
  const std::vector<LayerInfo> layers = build_layer_table(c.text);
  ASSERT_EQ(c.text.sliding_window, 16);
  const std::int64_t linears = 2 * 20 * 251904;                                 // 10076160
  const std::int64_t attention = 4 * (4 * 2 * 16 * 200) + 2 * (4 * 2 * 32 * 210);  // 102400 + 107520
  const std::int64_t ple_model_projection = 2 * 20 * 64 * 96;                    // 245760
  const std::int64_t lm_head = 2 * 1000 * 64;
  EXPECT_EQ(linears + attention + ple_model_projection + lm_head, 10659840);
  EXPECT_EQ(prefill_flops(c, layers, 20), 10659840);
}

// The tiny vision tower: Dv = 32, MLP 64, 2 layers, 2 heads (and 2 KV heads) of 16, patch 16;
// 18 patches pooled to 2 tokens of text width 64. Multiply-adds per patch row and layer:
// q, k, v, o 4 * 32*32 + gate, up, down 3 * 32*64 = 4096 + 6144 = 10240.
TEST(Flops, TinyVisionEncode) {
  const ModelConfig c = tiny_config();
  const std::int64_t linears = 2 * (2 * 18 * 10240);        // 737280
  const std::int64_t attention = 2 * (4 * 2 * 16 * 18 * 18);  // 82944
  const std::int64_t input_proj = 2 * 18 * (3 * 16 * 16) * 32;  // 884736
  const std::int64_t embedding_projection = 2 * 2 * 32 * 64;    // 8192
  EXPECT_EQ(linears + attention + input_proj + embedding_projection, 1713152);
  EXPECT_EQ(vision_encode_flops(*c.vision, c.text.hidden_size, 18, 2), 1713152);
}

// E2B's tower on a full 2520-patch grid: Dv = 768, MLP 3072, 16 layers, 12 heads of 64, pooled
// to 280 tokens of width 1536. About 1.08 TFLOP, most of it beyond 32-bit range.
TEST(Flops, E2BVisionEncodeFullGrid) {
  const ModelConfig c = preset_config("e2b", false);
  const std::int64_t patches = 2520;
  const std::int64_t per_row = 4 * 768 * 768 + 3 * 768 * 3072;                        // 9437184
  const std::int64_t per_layer = 2 * patches * per_row + 4 * 768 * patches * patches;  // 47563407360 + 19508428800
  const std::int64_t total = 16 * per_layer + 2 * patches * 768 * 768 + std::int64_t{2} * 280 * 768 * 1536;
  EXPECT_EQ(total, 1076782694400);
  EXPECT_EQ(vision_encode_flops(*c.vision, c.text.hidden_size, 2520, 280), 1076782694400);
}

}  // namespace
}  // namespace staticlm
