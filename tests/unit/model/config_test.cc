// parse_model_config / parse_generation_config on the E2B fixture (values from spec/gemma4.md
// section 1, typed into the fixture by hand), the text-only layout, defaults, and the RoPE and
// per-layer-config forms.
#include "model/config.h"

#include <gtest/gtest.h>

#include "model/layer_table.h"
#include "model_test_util.h"

namespace staticlm {
namespace {

using test::e2b_config;
using test::e2b_edited;

TEST(ModelConfig, E2BTopLevel) {
  const ModelConfig c = e2b_config();
  EXPECT_EQ(c.architecture, "Gemma4ForConditionalGeneration");
  EXPECT_EQ(c.model_type, "gemma4");
  EXPECT_TRUE(c.multimodal());
  EXPECT_EQ(c.text_prefix(), "model.language_model.");
  EXPECT_EQ(c.boi_token_id, 255999);
  EXPECT_EQ(c.eoi_token_id, 258882);
  EXPECT_EQ(c.image_token_id, std::optional<std::int64_t>(258880));
  EXPECT_EQ(c.video_token_id, 258884);
  EXPECT_EQ(c.boa_token_id, 256000);
  EXPECT_EQ(c.eoa_token_id, 258883);
  EXPECT_EQ(c.audio_token_id, 258881);
  EXPECT_EQ(c.vision_soft_tokens_per_image, 280);
  EXPECT_EQ(c.eos_token_id, (std::vector<std::int64_t>{1, 106}));
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.dtype, "bfloat16");
}

TEST(ModelConfig, E2BTextConfig) {
  const TextConfig t = e2b_config().text;
  EXPECT_EQ(t.vocab_size, 262144);
  EXPECT_EQ(t.hidden_size, 1536);
  EXPECT_EQ(t.intermediate_size, 6144);
  EXPECT_EQ(t.num_hidden_layers, 35);
  EXPECT_EQ(t.num_attention_heads, 8);
  EXPECT_EQ(t.num_key_value_heads, 1);
  EXPECT_EQ(t.head_dim, 256);
  EXPECT_EQ(t.global_head_dim, 512);
  EXPECT_FALSE(t.num_global_key_value_heads.has_value());
  EXPECT_TRUE(t.per_layer_config.empty());
  EXPECT_FALSE(t.attention_k_eq_v);
  EXPECT_EQ(t.hidden_activation, "gelu_pytorch_tanh");
  EXPECT_EQ(t.max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(t.rms_norm_eps, 1e-6);
  EXPECT_EQ(t.pad_token_id, 0);
  EXPECT_EQ(t.eos_token_id, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(t.bos_token_id, 2);
  EXPECT_TRUE(t.tie_word_embeddings);
  EXPECT_FALSE(t.attention_bias);
  EXPECT_EQ(t.sliding_window, 512);
  ASSERT_EQ(t.layer_types.size(), 35u);
  for (int i = 0; i < 35; ++i)
    EXPECT_EQ(t.layer_types[i], i % 5 == 4 ? "full_attention" : "sliding_attention") << "layer " << i;
  ASSERT_EQ(t.rope_parameters.size(), 2u);
  const RopeParameters& s = t.rope_parameters.at("sliding_attention");
  EXPECT_EQ(s.rope_type, "default");
  EXPECT_DOUBLE_EQ(s.rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(s.partial_rotary_factor, 1.0);
  EXPECT_DOUBLE_EQ(s.factor, 1.0);
  const RopeParameters& f = t.rope_parameters.at("full_attention");
  EXPECT_EQ(f.rope_type, "proportional");
  EXPECT_DOUBLE_EQ(f.rope_theta, 1000000.0);
  EXPECT_DOUBLE_EQ(f.partial_rotary_factor, 0.25);
  EXPECT_DOUBLE_EQ(f.factor, 1.0);
  EXPECT_EQ(t.final_logit_softcapping, std::optional<double>(30.0));
  EXPECT_FALSE(t.use_bidirectional_attention.has_value());
  EXPECT_EQ(t.vocab_size_per_layer_input, 262144);
  EXPECT_EQ(t.hidden_size_per_layer_input, 256);
  EXPECT_EQ(t.num_kv_shared_layers, 20);
  EXPECT_TRUE(t.use_double_wide_mlp);
  EXPECT_FALSE(t.enable_moe_block);
  EXPECT_FALSE(t.num_experts.has_value());
  EXPECT_FALSE(t.top_k_experts.has_value());
  EXPECT_FALSE(t.moe_intermediate_size.has_value());
  EXPECT_DOUBLE_EQ(t.attention_dropout, 0.0);
  EXPECT_DOUBLE_EQ(t.initializer_range, 0.02);
  EXPECT_TRUE(t.use_cache);
}

TEST(ModelConfig, E2BVisionConfig) {
  const ModelConfig c = e2b_config();
  ASSERT_TRUE(c.vision.has_value());
  const VisionConfig& v = *c.vision;
  EXPECT_EQ(v.hidden_size, 768);
  EXPECT_EQ(v.intermediate_size, 3072);
  EXPECT_EQ(v.num_hidden_layers, 16);
  EXPECT_EQ(v.num_attention_heads, 12);
  EXPECT_EQ(v.num_key_value_heads, 12);
  EXPECT_EQ(v.head_dim, 64);
  EXPECT_EQ(v.global_head_dim, 64);
  EXPECT_EQ(v.hidden_activation, "gelu_pytorch_tanh");
  EXPECT_DOUBLE_EQ(v.rms_norm_eps, 1e-6);
  EXPECT_EQ(v.patch_size, 16);
  EXPECT_EQ(v.pooling_kernel_size, 3);
  EXPECT_EQ(v.position_embedding_size, 10240);
  EXPECT_EQ(v.rope_parameters.rope_type, "default");
  EXPECT_DOUBLE_EQ(v.rope_parameters.rope_theta, 100.0);
  EXPECT_TRUE(v.use_clipped_linears);
  EXPECT_FALSE(v.standardize);
  EXPECT_EQ(v.default_output_length, 280);
  EXPECT_FALSE(v.attention_bias);
  EXPECT_EQ(v.max_position_embeddings, 131072);
}

TEST(ModelConfig, E2BAudioConfig) {
  const ModelConfig c = e2b_config();
  ASSERT_TRUE(c.audio.has_value());
  const AudioConfig& a = *c.audio;
  EXPECT_EQ(a.hidden_size, 1024);
  EXPECT_EQ(a.num_hidden_layers, 12);
  EXPECT_EQ(a.num_attention_heads, 8);
  EXPECT_EQ(a.hidden_act, "silu");
  EXPECT_EQ(a.subsampling_conv_channels, (std::vector<std::int64_t>{128, 32}));
  EXPECT_EQ(a.conv_kernel_size, 5);
  EXPECT_DOUBLE_EQ(a.residual_weight, 0.5);
  EXPECT_EQ(a.attention_chunk_size, 12);
  EXPECT_EQ(a.attention_context_left, 13);
  EXPECT_EQ(a.attention_context_right, 0);
  EXPECT_DOUBLE_EQ(a.attention_logit_cap, 50.0);
  EXPECT_DOUBLE_EQ(a.attention_invalid_logits_value, -1e9);
  EXPECT_TRUE(a.use_clipped_linears);
  EXPECT_DOUBLE_EQ(a.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(a.gradient_clipping, 1e10);
  EXPECT_EQ(a.output_proj_dims, 1536);
}

// The multimodal layout with nothing but model_type: every class default of spec 1.1 / 1.5.
TEST(ModelConfig, MultimodalDefaults) {
  const ModelConfig c = parse_model_config(R"({"model_type": "gemma4"})", "config.json");
  EXPECT_EQ(c.architecture, "Gemma4ForConditionalGeneration");
  EXPECT_FALSE(c.vision.has_value());
  EXPECT_FALSE(c.audio.has_value());
  EXPECT_EQ(c.image_token_id, std::optional<std::int64_t>(258880));
  EXPECT_EQ(c.eoa_token_id, 258883);
  EXPECT_EQ(c.eos_token_id, (std::vector<std::int64_t>{1}));  // text_config's default
  const TextConfig& t = c.text;
  EXPECT_EQ(t.vocab_size, 262144);
  EXPECT_EQ(t.hidden_size, 2304);
  EXPECT_EQ(t.intermediate_size, 9216);
  EXPECT_EQ(t.num_hidden_layers, 30);
  EXPECT_EQ(t.num_attention_heads, 8);
  EXPECT_EQ(t.num_key_value_heads, 4);
  EXPECT_EQ(t.head_dim, 256);
  EXPECT_EQ(t.global_head_dim, 512);
  EXPECT_EQ(t.sliding_window, 512);
  EXPECT_FALSE(t.final_logit_softcapping.has_value());
  EXPECT_EQ(t.hidden_size_per_layer_input, 256);
  EXPECT_EQ(t.num_kv_shared_layers, 0);
  EXPECT_FALSE(t.use_double_wide_mlp);
  // 5:1 pattern: full at 5, 11, 17, 23, 29 (29 is also the last layer).
  ASSERT_EQ(t.layer_types.size(), 30u);
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(t.layer_types[i], (i + 1) % 6 == 0 ? "full_attention" : "sliding_attention") << "layer " << i;
  EXPECT_EQ(t.rope_parameters.at("sliding_attention"), (RopeParameters{"default", 10000.0, 1.0, 1.0}));
  EXPECT_EQ(t.rope_parameters.at("full_attention"), (RopeParameters{"proportional", 1000000.0, 0.25, 1.0}));
}

TEST(ModelConfig, VisionConfigDefaultsWhenFieldsMissing) {
  const ModelConfig c =
      parse_model_config(R"({"model_type": "gemma4", "vision_config": {}, "audio_config": null})", "config.json");
  ASSERT_TRUE(c.vision.has_value());
  EXPECT_FALSE(c.audio.has_value());
  EXPECT_EQ(c.vision->hidden_size, 768);
  EXPECT_EQ(c.vision->num_hidden_layers, 16);
  EXPECT_EQ(c.vision->head_dim, 64);
  EXPECT_FALSE(c.vision->use_clipped_linears);  // the newest HF class default
  EXPECT_EQ(c.vision->default_output_length, 280);
  EXPECT_EQ(c.vision->rope_parameters, (RopeParameters{"default", 100.0, 1.0, 1.0}));
}

TEST(ModelConfig, TextOnlyLayout) {
  nlohmann::json j = test::e2b_config_json()["text_config"];
  j["architectures"] = {"Gemma4ForCausalLM"};
  j["eos_token_id"] = {1, 106};
  const ModelConfig c = parse_model_config(j.dump(), "config.json");
  EXPECT_FALSE(c.multimodal());
  EXPECT_EQ(c.model_type, "gemma4_text");
  EXPECT_EQ(c.architecture, "Gemma4ForCausalLM");
  EXPECT_EQ(c.text_prefix(), "model.");
  EXPECT_FALSE(c.vision.has_value());
  EXPECT_EQ(c.text.hidden_size, 1536);
  EXPECT_EQ(c.text.num_kv_shared_layers, 20);
  EXPECT_EQ(c.text.eos_token_id, (std::vector<std::int64_t>{1, 106}));
  EXPECT_EQ(c.eos_token_id, (std::vector<std::int64_t>{1, 106}));
  // The same text model as the multimodal file.
  TextConfig expected = e2b_config().text;
  expected.eos_token_id = {1, 106};
  EXPECT_EQ(c.text, expected);
}

TEST(ModelConfig, TextOnlyDefaultArchitecture) {
  const ModelConfig c = parse_model_config(R"({"model_type": "gemma4_text", "num_hidden_layers": 6})", "c");
  EXPECT_EQ(c.architecture, "Gemma4ForCausalLM");
  EXPECT_EQ(c.text.layer_types, default_layer_types(6));
}

TEST(ModelConfig, RopeParametersAsOneDict) {
  const ModelConfig c = parse_model_config(
      R"({"model_type": "gemma4_text", "global_head_dim": 256,
          "rope_parameters": {"rope_type": "default", "rope_theta": 5000.0}})",
      "config.json");
  ASSERT_EQ(c.text.rope_parameters.size(), 2u);
  EXPECT_EQ(c.text.rope_parameters.at("sliding_attention"), (RopeParameters{"default", 5000.0, 1.0, 1.0}));
  EXPECT_EQ(c.text.rope_parameters.at("full_attention"), (RopeParameters{"default", 5000.0, 1.0, 1.0}));
}

TEST(ModelConfig, LastLayerForcedFull) {
  const ModelConfig c = parse_model_config(
      R"({"model_type": "gemma4_text", "num_hidden_layers": 3,
          "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]})",
      "config.json");
  EXPECT_EQ(c.text.layer_types, (std::vector<std::string>{"full_attention", "sliding_attention", "full_attention"}));
}

TEST(ModelConfig, NullGlobalHeadDimMeansHeadDim) {
  const ModelConfig c =
      parse_model_config(R"({"model_type": "gemma4_text", "head_dim": 128, "global_head_dim": null})", "c");
  EXPECT_EQ(c.text.global_head_dim, 128);
}

// Newer transformers write per_layer_config instead of global_head_dim (keys may be zero-padded).
TEST(ModelConfig, PerLayerConfig) {
  const std::string text = e2b_edited([](nlohmann::json& j) {
    auto& t = j["text_config"];
    t.erase("global_head_dim");
    t["per_layer_config"] = nlohmann::json::object();
    for (int i : {4, 9, 14, 19, 24, 29, 34}) t["per_layer_config"][std::to_string(i)] = {{"head_dim", 512}};
    t["per_layer_config"].erase("4");
    t["per_layer_config"]["04"] = {{"head_dim", 512}, {"num_key_value_heads", 1}};
  });
  const ModelConfig c = parse_model_config(text, "config.json");
  ASSERT_EQ(c.text.per_layer_config.size(), 7u);
  EXPECT_EQ(c.text.per_layer_config.at(4), (LayerOverride{512, std::nullopt, 1}));
  EXPECT_EQ(c.text.per_layer_config.at(34), (LayerOverride{512, std::nullopt, std::nullopt}));
  // Same table as the global_head_dim form.
  EXPECT_EQ(build_layer_table(c.text), build_layer_table(e2b_config().text));
}

TEST(ModelConfig, TorchDtypeAlias) {
  const ModelConfig c = parse_model_config(R"({"model_type": "gemma4_text", "torch_dtype": "float32"})", "c");
  EXPECT_EQ(c.dtype, "float32");
}

TEST(ModelConfig, EoaTokenIndexAlone) {
  const ModelConfig c = parse_model_config(R"({"model_type": "gemma4", "eoa_token_index": 7})", "c");
  EXPECT_EQ(c.eoa_token_id, 7);
}

TEST(ModelConfig, LoadFromDirectory) {
  test::TempDir dir;
  write_text_atomic(dir.file("config.json"), test::e2b_config_text());
  EXPECT_EQ(load_model_config(dir.path()), e2b_config());
  EXPECT_FALSE(load_generation_config(dir.path()).has_value());
}

TEST(ModelConfig, LoadFromDirectoryWithoutConfig) {
  test::TempDir dir;
  try {
    load_model_config(dir.path());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_EQ(std::string(e.what()).rfind(dir.file("config.json") + ": cannot open", 0), 0u) << e.what();
  }
}

TEST(GenerationConfig, E2BFixtureWithEosList) {
  const GenerationConfig g =
      parse_generation_config(read_file(test::fixture("config/e2b_generation_config.json")), "generation_config.json");
  EXPECT_EQ(g.eos_token_id, (std::vector<std::int64_t>{1, 106, 50}));
  EXPECT_EQ(g.pad_token_id, std::optional<std::int64_t>(0));
  EXPECT_EQ(g.bos_token_id, std::optional<std::int64_t>(2));
  EXPECT_TRUE(g.do_sample);
  EXPECT_EQ(g.temperature, std::optional<double>(1.0));
  EXPECT_EQ(g.top_k, std::optional<std::int64_t>(64));
  EXPECT_EQ(g.top_p, std::optional<double>(0.95));
  EXPECT_FALSE(g.min_p.has_value());
  EXPECT_FALSE(g.repetition_penalty.has_value());
  EXPECT_FALSE(g.max_new_tokens.has_value());
}

TEST(GenerationConfig, TypicalPInRange) {
  EXPECT_EQ(parse_generation_config(R"({"typical_p": 0.5})", "g").typical_p, std::optional<double>(0.5));
  for (const char* bad : {R"({"typical_p": 0})", R"({"typical_p": 1.5})"}) {
    try {
      parse_generation_config(bad, "generation_config.json");
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("generation_config.json: typical_p: expected a number in (0, 1]"),
                std::string::npos) << e.what();
    }
  }
}

TEST(GenerationConfig, EosAsInteger) {
  const GenerationConfig g = parse_generation_config(R"({"eos_token_id": 1, "max_new_tokens": 32})", "g");
  EXPECT_EQ(g.eos_token_id, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(g.max_new_tokens, std::optional<std::int64_t>(32));
  EXPECT_FALSE(g.do_sample);
  EXPECT_FALSE(g.temperature.has_value());
}

TEST(GenerationConfig, LoadFromDirectory) {
  test::TempDir dir;
  write_text_atomic(dir.file("generation_config.json"), R"({"eos_token_id": [1, 106], "top_k": 5})");
  const auto g = load_generation_config(dir.path());
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->eos_token_id, (std::vector<std::int64_t>{1, 106}));
  EXPECT_EQ(g->top_k, std::optional<std::int64_t>(5));
}

}  // namespace
}  // namespace staticlm
