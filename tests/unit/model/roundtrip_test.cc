// model_config_to_json / generation_config_to_json: the HF layout, and parse(to_json(c)) == c.
#include <gtest/gtest.h>

#include "model/config.h"
#include "model_test_util.h"

namespace staticlm {
namespace {

using nlohmann::json;

ModelConfig reparse(const ModelConfig& c) { return parse_model_config(model_config_to_json(c), "written.json"); }

TEST(ConfigRoundTrip, E2B) {
  const ModelConfig c = test::e2b_config();
  EXPECT_EQ(reparse(c), c);
}

TEST(ConfigRoundTrip, MultimodalLayout) {
  const json j = json::parse(model_config_to_json(test::e2b_config()));
  EXPECT_EQ(j.at("architectures"), json::array({"Gemma4ForConditionalGeneration"}));
  EXPECT_EQ(j.at("model_type"), "gemma4");
  EXPECT_EQ(j.at("text_config").at("model_type"), "gemma4_text");
  EXPECT_EQ(j.at("text_config").at("hidden_size"), 1536);
  EXPECT_EQ(j.at("text_config").at("rope_parameters").at("full_attention").at("partial_rotary_factor"), 0.25);
  EXPECT_EQ(j.at("vision_config").at("model_type"), "gemma4_vision");
  EXPECT_EQ(j.at("vision_config").at("use_clipped_linears"), true);
  EXPECT_EQ(j.at("audio_config").at("model_type"), "gemma4_audio");
  EXPECT_EQ(j.at("eos_token_id"), json::array({1, 106}));
  EXPECT_EQ(j.at("image_token_id"), 258880);
  EXPECT_EQ(j.at("eoa_token_index"), 258883);
  EXPECT_FALSE(j.contains("hidden_size"));  // text fields stay nested
}

TEST(ConfigRoundTrip, TextOnlyLayout) {
  json in = test::e2b_config_json()["text_config"];
  in["architectures"] = {"Gemma4ForCausalLM"};
  const ModelConfig c = parse_model_config(in.dump(), "config.json");
  const json j = json::parse(model_config_to_json(c));
  EXPECT_EQ(j.at("architectures"), json::array({"Gemma4ForCausalLM"}));
  EXPECT_EQ(j.at("model_type"), "gemma4_text");
  EXPECT_EQ(j.at("hidden_size"), 1536);
  EXPECT_FALSE(j.contains("text_config"));
  EXPECT_FALSE(j.contains("vision_config"));
  EXPECT_EQ(reparse(c), c);
}

// Every field away from its default (within what the runtime accepts) survives the trip.
TEST(ConfigRoundTrip, NonDefaultValues) {
  ModelConfig c = test::e2b_config();
  TextConfig& t = c.text;
  t.vocab_size = 1000;
  t.vocab_size_per_layer_input = 999;
  t.hidden_size = 64;
  t.intermediate_size = 96;
  t.num_hidden_layers = 7;
  t.num_attention_heads = 4;
  t.num_key_value_heads = 2;
  t.head_dim = 16;
  t.global_head_dim = 32;
  t.num_global_key_value_heads = 1;
  t.layer_types = {"sliding_attention", "full_attention",    "sliding_attention", "sliding_attention",
                   "full_attention",    "sliding_attention", "full_attention"};
  t.rope_parameters["sliding_attention"].rope_theta = 123.5;
  t.rope_parameters["full_attention"].partial_rotary_factor = 0.5;
  t.max_position_embeddings = 4096;
  t.rms_norm_eps = 1e-5;
  t.pad_token_id = 3;
  t.eos_token_id = {7, 8};
  t.bos_token_id = 4;
  t.sliding_window = 33;
  t.final_logit_softcapping.reset();
  t.hidden_size_per_layer_input = 8;
  t.num_kv_shared_layers = 2;
  t.use_double_wide_mlp = false;
  t.attention_dropout = 0.125;
  t.initializer_range = 0.5;
  t.use_cache = false;
  t.num_experts = 4;  // parsed and kept, unused while enable_moe_block is false
  t.top_k_experts = 2;
  t.moe_intermediate_size = 8;
  c.vision->hidden_size = 48;
  c.vision->num_hidden_layers = 2;
  c.vision->num_attention_heads = 3;
  c.vision->num_key_value_heads = 1;
  c.vision->head_dim = 16;
  c.vision->standardize = true;
  c.vision->use_clipped_linears = false;
  c.vision->rope_parameters.rope_theta = 50.0;
  c.vision->position_embedding_size = 77;
  c.audio.reset();
  c.image_token_id.reset();
  c.eos_token_id = {9};
  c.boi_token_id = 11;
  c.eoa_token_id = 12;
  c.vision_soft_tokens_per_image = 70;
  c.dtype = "float32";
  const ModelConfig back = reparse(c);
  EXPECT_EQ(back.text, c.text);
  EXPECT_EQ(back.vision, c.vision);
  EXPECT_EQ(back, c);
}

TEST(ConfigRoundTrip, PerLayerConfig) {
  ModelConfig c = test::e2b_config();
  for (int i : {4, 9, 14, 19, 24, 29, 34}) c.text.per_layer_config[i] = LayerOverride{512, 8, 1};
  EXPECT_EQ(reparse(c), c);
}

TEST(ConfigRoundTrip, WrittenBytesAreStable) {
  const ModelConfig c = test::e2b_config();
  EXPECT_EQ(model_config_to_json(reparse(c)), model_config_to_json(c));
}

TEST(GenerationConfigRoundTrip, AllFields) {
  GenerationConfig g;
  g.eos_token_id = {1, 106, 50};
  g.pad_token_id = 0;
  g.bos_token_id = 2;
  g.do_sample = true;
  g.temperature = 0.7;
  g.top_k = 64;
  g.top_p = 0.95;
  g.min_p = 0.05;
  g.typical_p = 0.9;
  g.repetition_penalty = 1.1;
  g.max_new_tokens = 128;
  const std::string text = generation_config_to_json(g);
  EXPECT_EQ(parse_generation_config(text, "g"), g);
  EXPECT_EQ(json::parse(text).at("eos_token_id"), json::array({1, 106, 50}));
}

TEST(GenerationConfigRoundTrip, UnsetFieldsLeftOut) {
  GenerationConfig g;
  g.eos_token_id = {1};
  const json j = json::parse(generation_config_to_json(g));
  EXPECT_FALSE(j.contains("temperature"));
  EXPECT_FALSE(j.contains("top_k"));
  EXPECT_EQ(parse_generation_config(j.dump(), "g"), g);
}

}  // namespace
}  // namespace staticlm
