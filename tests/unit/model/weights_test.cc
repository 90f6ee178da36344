// expected_weights / count_parameters / check_weights. Names and shapes are checked against
// spec/gemma4.md 2.6 and 4 (typed in here), counts against sums written out from those shapes.
#include "model/weights.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model_test_util.h"

namespace staticlm {
namespace {

std::map<std::string, Shape> by_name(const std::vector<WeightSpec>& specs) {
  std::map<std::string, Shape> m;
  for (const WeightSpec& s : specs) EXPECT_TRUE(m.emplace(s.name, s.shape).second) << "duplicate " << s.name;
  return m;
}

std::size_t count_prefix(const std::vector<WeightSpec>& specs, const std::string& prefix) {
  std::size_t n = 0;
  for (const WeightSpec& s : specs) n += s.name.rfind(prefix, 0) == 0;
  return n;
}

TEST(ExpectedWeights, E2BCounts) {
  const auto specs = expected_weights(test::e2b_config());
  // Text: 5 globals; 17 per layer owning K/V (5 norms, q, q_norm, k, v, k_norm, o, 3 MLP,
  // 2 PLE linears, layer_scalar); 14 per shared layer (no k, v, k_norm).
  EXPECT_EQ(count_prefix(specs, "model.language_model."), 5u + 15 * 17 + 20 * 14);
  // Vision: 2 patch-embedder tensors; per layer 7 clippable linears (weight + 4 bounds), q/k
  // norms, 4 layer norms.
  EXPECT_EQ(count_prefix(specs, "model.vision_tower."), 2u + 16 * (7 * 5 + 2 + 4));
  EXPECT_EQ(count_prefix(specs, "model.embed_vision."), 1u);
  EXPECT_EQ(specs.size(), 540u + 658u + 1u);
  by_name(specs);  // no duplicates
}

TEST(ExpectedWeights, E2BTextSample) {
  const auto m = by_name(expected_weights(test::e2b_config()));
  const std::string p = "model.language_model.";
  const std::vector<std::pair<std::string, Shape>> expected = {
      {"embed_tokens.weight", {262144, 1536}},
      {"embed_tokens_per_layer.weight", {262144, 8960}},
      {"per_layer_model_projection.weight", {8960, 1536}},
      {"per_layer_projection_norm.weight", {256}},
      {"norm.weight", {1536}},
      {"layers.0.input_layernorm.weight", {1536}},
      {"layers.0.self_attn.q_proj.weight", {2048, 1536}},
      {"layers.0.self_attn.k_proj.weight", {256, 1536}},
      {"layers.0.self_attn.v_proj.weight", {256, 1536}},
      {"layers.0.self_attn.q_norm.weight", {256}},
      {"layers.0.self_attn.k_norm.weight", {256}},
      {"layers.0.self_attn.o_proj.weight", {1536, 2048}},
      {"layers.0.mlp.up_proj.weight", {6144, 1536}},
      {"layers.0.mlp.down_proj.weight", {1536, 6144}},
      {"layers.3.per_layer_input_gate.weight", {256, 1536}},
      {"layers.3.per_layer_projection.weight", {1536, 256}},
      {"layers.3.post_per_layer_input_norm.weight", {1536}},
      {"layers.4.self_attn.q_proj.weight", {4096, 1536}},
      {"layers.4.self_attn.k_proj.weight", {512, 1536}},
      {"layers.4.self_attn.q_norm.weight", {512}},
      {"layers.4.self_attn.k_norm.weight", {512}},
      {"layers.4.self_attn.o_proj.weight", {1536, 4096}},
      {"layers.14.self_attn.v_proj.weight", {512, 1536}},
      {"layers.15.self_attn.q_proj.weight", {2048, 1536}},
      {"layers.15.self_attn.q_norm.weight", {256}},
      {"layers.15.mlp.gate_proj.weight", {12288, 1536}},
      {"layers.15.mlp.down_proj.weight", {1536, 12288}},
      {"layers.19.self_attn.q_proj.weight", {4096, 1536}},
      {"layers.34.self_attn.o_proj.weight", {1536, 4096}},
      {"layers.34.post_feedforward_layernorm.weight", {1536}},
      {"layers.34.layer_scalar", {1}},
  };
  for (const auto& [name, shape] : expected) {
    auto it = m.find(p + name);
    ASSERT_NE(it, m.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  for (const char* absent :
       {"layers.15.self_attn.k_proj.weight", "layers.15.self_attn.v_proj.weight", "layers.15.self_attn.k_norm.weight",
        "layers.34.self_attn.k_proj.weight", "layers.0.self_attn.v_norm.weight", "lm_head.weight"})
    EXPECT_EQ(m.count(p + absent), 0u) << absent;
  EXPECT_EQ(m.count("lm_head.weight"), 0u);
}

TEST(ExpectedWeights, E2BVisionSample) {
  const auto m = by_name(expected_weights(test::e2b_config()));
  const std::string v = "model.vision_tower.";
  const std::vector<std::pair<std::string, Shape>> expected = {
      {v + "patch_embedder.input_proj.weight", {768, 768}},
      {v + "patch_embedder.position_embedding_table", {2, 10240, 768}},
      {v + "encoder.layers.0.self_attn.q_proj.linear.weight", {768, 768}},
      {v + "encoder.layers.0.self_attn.q_proj.input_min", {}},
      {v + "encoder.layers.0.self_attn.q_proj.input_max", {}},
      {v + "encoder.layers.0.self_attn.q_proj.output_min", {}},
      {v + "encoder.layers.0.self_attn.q_proj.output_max", {}},
      {v + "encoder.layers.7.self_attn.k_proj.linear.weight", {768, 768}},
      {v + "encoder.layers.7.self_attn.v_proj.output_max", {}},
      {v + "encoder.layers.15.self_attn.o_proj.linear.weight", {768, 768}},
      {v + "encoder.layers.15.self_attn.q_norm.weight", {64}},
      {v + "encoder.layers.15.self_attn.k_norm.weight", {64}},
      {v + "encoder.layers.3.input_layernorm.weight", {768}},
      {v + "encoder.layers.3.post_attention_layernorm.weight", {768}},
      {v + "encoder.layers.3.pre_feedforward_layernorm.weight", {768}},
      {v + "encoder.layers.3.post_feedforward_layernorm.weight", {768}},
      {v + "encoder.layers.0.mlp.gate_proj.linear.weight", {3072, 768}},
      {v + "encoder.layers.0.mlp.up_proj.linear.weight", {3072, 768}},
      {v + "encoder.layers.0.mlp.down_proj.linear.weight", {768, 3072}},
      {v + "encoder.layers.0.mlp.down_proj.input_min", {}},
      {"model.embed_vision.embedding_projection.weight", {1536, 768}},
  };
  for (const auto& [name, shape] : expected) {
    auto it = m.find(name);
    ASSERT_NE(it, m.end()) << name;
    EXPECT_EQ(it->second, shape) << name;
  }
  for (const char* absent : {"encoder.layers.16.input_layernorm.weight", "std_bias", "std_scale", "pooler.scale",
                             "encoder.layers.0.self_attn.v_norm.weight"})
    EXPECT_EQ(m.count(v + absent), 0u) << absent;
}

TEST(ExpectedWeights, TextOnlyLayout) {
  nlohmann::json j = test::e2b_config_json()["text_config"];
  const auto specs = expected_weights(parse_model_config(j.dump(), "config.json"));
  EXPECT_EQ(specs.size(), 540u);
  EXPECT_EQ(count_prefix(specs, "model.layers."), 535u);
  const auto m = by_name(specs);
  EXPECT_EQ(m.at("model.embed_tokens.weight"), (Shape{262144, 1536}));
  EXPECT_EQ(m.at("model.layers.14.self_attn.k_proj.weight"), (Shape{512, 1536}));
  EXPECT_EQ(count_prefix(specs, "model.vision_tower."), 0u);
}

TEST(ExpectedWeights, NoPleTensorsWhenWidthZero) {
  const auto c = parse_model_config(
      test::e2b_edited([](nlohmann::json& j) { j["text_config"]["hidden_size_per_layer_input"] = 0; }), "config.json");
  const auto specs = expected_weights(c);
  EXPECT_EQ(count_prefix(specs, "model.language_model."), 540u - 3 - 35 * 3);
  for (const WeightSpec& s : specs) {
    EXPECT_EQ(s.name.find("per_layer"), std::string::npos) << s.name;
  }
}

TEST(ExpectedWeights, VisionVariants) {
  // No clip bounds without use_clipped_linears; std_bias / std_scale with standardize.
  const auto c = parse_model_config(test::e2b_edited([](nlohmann::json& j) {
                                      j["vision_config"]["use_clipped_linears"] = false;
                                      j["vision_config"]["standardize"] = true;
                                    }),
                                    "config.json");
  const auto specs = expected_weights(c);
  EXPECT_EQ(count_prefix(specs, "model.vision_tower."), 2u + 16 * (7 + 2 + 4) + 2);
  const auto m = by_name(specs);
  EXPECT_EQ(m.at("model.vision_tower.std_bias"), (Shape{768}));
  EXPECT_EQ(m.at("model.vision_tower.std_scale"), (Shape{768}));
  EXPECT_EQ(m.count("model.vision_tower.encoder.layers.0.self_attn.q_proj.input_min"), 0u);

  // A multimodal config with vision_config null has no vision tensors.
  const auto no_vision =
      parse_model_config(test::e2b_edited([](nlohmann::json& j) { j["vision_config"] = nullptr; }), "config.json");
  EXPECT_EQ(expected_weights(no_vision).size(), 540u);
  EXPECT_EQ(count_parameters(no_vision).vision, 0);
}

// Closed form from the shapes of spec 2.6 / 1.2 (E2B): V = 262144, H = 1536, P = 256, L = 35.
TEST(CountParameters, E2BTextClosedForm) {
  const std::int64_t V = 262144, H = 1536, P = 256, L = 35;
  const std::int64_t globals = V * H + V * (L * P) + (L * P) * H + P + H;
  const std::int64_t per_layer_common = 5 * H + P * H + H * P + 1;  // 5 norms, PLE gate + projection, layer_scalar
  const std::int64_t sliding_own = 2048 * H + 256 + 2 * 256 * H + 256 + H * 2048 + 3 * 6144 * H;
  const std::int64_t full_own = 4096 * H + 512 + 2 * 512 * H + 512 + H * 4096 + 3 * 6144 * H;
  const std::int64_t sliding_shared = 2048 * H + 256 + H * 2048 + 3 * 12288 * H;
  const std::int64_t full_shared = 4096 * H + 512 + H * 4096 + 3 * 12288 * H;
  // Layers 0-14: 12 sliding + 3 full own K/V; 15-34: 16 sliding + 4 full shared.
  const std::int64_t expected =
      globals + L * per_layer_common + 12 * sliding_own + 3 * full_own + 16 * sliding_shared + 4 * full_shared;
  const ParameterCount n = count_parameters(test::e2b_config());
  EXPECT_EQ(n.text, expected);
  EXPECT_EQ(n.text, 4628569379);  // the same sum, evaluated once in Python
}

TEST(CountParameters, E2BVisionClosedForm) {
  const std::int64_t D = 768, F = 3072;
  const std::int64_t per_layer = 4 * D * D + 3 * F * D + 7 * 4 + 2 * 64 + 4 * D;
  const std::int64_t expected = D * (3 * 16 * 16) + 2 * 10240 * D + 16 * per_layer + 1536 * D;
  const ParameterCount n = count_parameters(test::e2b_config());
  EXPECT_EQ(n.vision, expected);
  EXPECT_EQ(n.total(), n.text + expected);
}

TEST(CountParameters, OverflowIsAnError) {
  // Every extent within the parser's limits, yet q_proj alone would hold 2^72 elements.
  const ModelConfig c = parse_model_config(
      R"({"model_type": "gemma4_text", "hidden_size": 16777216, "num_attention_heads": 16777216,
          "num_key_value_heads": 1, "head_dim": 16777216})",
      "config.json");
  test::expect_error([&] { count_parameters(c); }, ErrorKind::kOutOfRange,
                     "the model config describes more than 2^63 parameters (at "
                     "model.layers.0.self_attn.q_proj.weight [281474976710656, 16777216])");
}

// check_weights against an in-memory store built from the expected list, then damaged.
TEST(CheckWeights, ReportsEveryProblemByName) {
  const ModelConfig c = test::e2b_config();
  std::map<std::string, TensorInfo> store;
  for (const WeightSpec& s : expected_weights(c)) store[s.name] = {DType::kBF16, s.shape};
  auto lookup = [&store](const std::string& name) -> std::optional<TensorInfo> {
    auto it = store.find(name);
    return it == store.end() ? std::nullopt : std::optional(it->second);
  };
  EXPECT_NO_THROW(check_weights(c, lookup, "ckpt"));

  store["lm_head.weight"] = {DType::kBF16, Shape{262144, 1536}};  // extra tensors are fine
  store["model.language_model.layers.20.self_attn.k_proj.weight"] = {DType::kBF16, Shape{256, 1536}};
  store["model.language_model.layers.0.layer_scalar"].dtype = DType::kF32;  // any float is fine
  EXPECT_NO_THROW(check_weights(c, lookup, "ckpt"));

  store.erase("model.language_model.norm.weight");
  store.erase("model.vision_tower.encoder.layers.3.mlp.up_proj.output_max");
  store["model.language_model.layers.4.self_attn.q_proj.weight"].shape = Shape{2048, 1536};
  store["model.language_model.layers.34.layer_scalar"].shape = Shape{};
  store["model.embed_vision.embedding_projection.weight"].dtype = DType::kI8;
  test::expect_error(
      [&] { check_weights(c, lookup, "/ckpt/model.safetensors"); }, ErrorKind::kInvalidFile,
      "/ckpt/model.safetensors: does not match the model config: 5 problems: "
      "missing model.language_model.norm.weight [1536]; "
      "model.language_model.layers.4.self_attn.q_proj.weight has shape [2048, 1536], expected [4096, 1536]; "
      "model.language_model.layers.34.layer_scalar has shape [], expected [1]; "
      "missing model.vision_tower.encoder.layers.3.mlp.up_proj.output_max []; "
      "model.embed_vision.embedding_projection.weight is quantized (I8) but "
      "model.embed_vision.embedding_projection.weight_scale is missing");

  // With its scale the quantized matrix is accepted; a quantized vector (a norm) never is.
  store["model.embed_vision.embedding_projection.weight_scale"] = {DType::kF32, Shape{1536}};
  store["model.language_model.norm.weight"] = {DType::kI8, Shape{1536}};
  store.erase("model.vision_tower.encoder.layers.3.mlp.up_proj.output_max");
  store["model.language_model.layers.4.self_attn.q_proj.weight"].shape = Shape{4096, 1536};
  store["model.language_model.layers.34.layer_scalar"].shape = Shape{1};
  store["model.vision_tower.encoder.layers.3.mlp.up_proj.output_max"] = {DType::kBF16, Shape{}};
  test::expect_error([&] { check_weights(c, lookup, "ckpt"); }, ErrorKind::kInvalidFile,
                     "ckpt: does not match the model config: 1 problem: "
                     "model.language_model.norm.weight has dtype I8, expected a float type");
}

}  // namespace
}  // namespace staticlm
