// Bad config.json / generation_config.json: each wrong type, each refusal and each impossible
// value gives one line naming the file and the field.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/file.h"
#include "model/config.h"
#include "model_test_util.h"

namespace staticlm {
namespace {

using nlohmann::json;
using test::e2b_edited;
using test::expect_config_error;
constexpr ErrorKind kFile = ErrorKind::kInvalidFile;
constexpr ErrorKind kUnsup = ErrorKind::kUnsupported;

TEST(ConfigErrors, WrongTypes) {
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_size"] = "abc"; }), kFile,
                      "config.json: text_config.hidden_size: expected an integer, got \"abc\"");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["num_hidden_layers"] = 35.0; }), kFile,
                      "config.json: text_config.num_hidden_layers: expected an integer, got 35.0");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["rms_norm_eps"] = "1e-6"; }), kFile,
                      "config.json: text_config.rms_norm_eps: expected a number, got \"1e-6\"");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["use_double_wide_mlp"] = 1; }), kFile,
                      "config.json: text_config.use_double_wide_mlp: expected true or false, got 1");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_activation"] = 5; }), kFile,
                      "config.json: text_config.hidden_activation: expected a string, got 5");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["layer_types"][2] = 3; }), kFile,
                      "config.json: text_config.layer_types[2]: expected a string, got 3");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["layer_types"] = "sliding_attention"; }), kFile,
                      "config.json: text_config.layer_types: expected a list of strings, got \"sliding_attention\"");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["final_logit_softcapping"] = true; }), kFile,
                      "config.json: text_config.final_logit_softcapping: expected a number, got true");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["use_bidirectional_attention"] = 1; }), kFile,
                      "config.json: text_config.use_bidirectional_attention: expected a string or null, got 1");
  expect_config_error(
      e2b_edited([](json& j) { j["text_config"]["rope_parameters"]["full_attention"]["rope_theta"] = "big"; }), kFile,
      "config.json: text_config.rope_parameters.full_attention.rope_theta: expected a number, got \"big\"");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["rope_parameters"] = 10000; }), kFile,
                      "config.json: text_config.rope_parameters: expected an object, got 10000");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["pad_token_id"] = nullptr; }), kFile,
                      "config.json: text_config.pad_token_id: expected an integer, got null");
  expect_config_error(e2b_edited([](json& j) { j["text_config"] = json::array({1}); }), kFile,
                      "config.json: text_config: expected an object, got [1]");
  expect_config_error(e2b_edited([](json& j) { j["vision_config"]["patch_size"] = 16.5; }), kFile,
                      "config.json: vision_config.patch_size: expected an integer, got 16.5");
  expect_config_error(e2b_edited([](json& j) { j["vision_config"]["use_clipped_linears"] = "true"; }), kFile,
                      "config.json: vision_config.use_clipped_linears: expected true or false, got \"true\"");
  expect_config_error(e2b_edited([](json& j) { j["audio_config"]["subsampling_conv_channels"][1] = "32"; }), kFile,
                      "config.json: audio_config.subsampling_conv_channels[1]: expected an integer, got \"32\"");
  expect_config_error(e2b_edited([](json& j) {
                        j["eos_token_id"] = json::array({1, "106"});
                      }),
                      kFile, "config.json: eos_token_id[1]: expected an integer, got \"106\"");
  expect_config_error(e2b_edited([](json& j) { j["image_token_id"] = "258880"; }), kFile,
                      "config.json: image_token_id: expected an integer, got \"258880\"");
  expect_config_error(e2b_edited([](json& j) { j["architectures"] = "Gemma4ForConditionalGeneration"; }), kFile,
                      "config.json: architectures: expected a list of strings, got \"Gemma4ForConditionalGeneration\"");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["vocab_size"] = 18446744073709551615ull; }), kFile,
                      "config.json: text_config.vocab_size: expected an integer, got 18446744073709551615");
}

TEST(ConfigErrors, TextOnlyFieldsNameTheTopLevel) {
  expect_config_error(R"({"model_type": "gemma4_text", "hidden_size": [1536]})", kFile,
                      "config.json: hidden_size: expected an integer, got [1536]");
}

TEST(ConfigErrors, LongValuesAreCutShort) {
  const std::string text = e2b_edited([](json& j) { j["text_config"]["hidden_size"] = std::string(200, 'x'); });
  expect_config_error(
      text, kFile, "config.json: text_config.hidden_size: expected an integer, got \"" + std::string(44, 'x') + "...");
}

TEST(ConfigErrors, NotJson) {
  try {
    parse_model_config("{\"model_type\": \"gemma4\",\n  oops}", "config.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kFile);
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("config.json: not valid JSON: parse error at line 2, column 3", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  expect_config_error("[1, 2]", kFile, "config.json: expected a JSON object at the top level, got [1,2]");
}

TEST(ConfigErrors, ModelType) {
  expect_config_error(R"({"hidden_size": 8})", kFile,
                      "config.json: model_type: missing (expected \"gemma4\" or \"gemma4_text\")");
  expect_config_error(R"({"model_type": "gemma3"})", kUnsup,
                      "config.json: model_type: \"gemma3\" is not supported (expected \"gemma4\" or \"gemma4_text\")");
  expect_config_error(
      e2b_edited([](json& j) { j["text_config"]["model_type"] = "gemma3n_text"; }), kUnsup,
      "config.json: text_config.model_type: \"gemma3n_text\" is not supported (expected \"gemma4_text\")");
}

TEST(ConfigErrors, Refusals) {
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["enable_moe_block"] = true; }), kUnsup,
                      "config.json: text_config.enable_moe_block: mixture-of-experts blocks (as in gemma-4-26B-A4B) "
                      "are not supported by this runtime");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["attention_k_eq_v"] = true; }), kUnsup,
                      "config.json: text_config.attention_k_eq_v: full-attention layers that reuse keys as values "
                      "(as in gemma-4-31B) are not supported by this runtime");
  expect_config_error(
      e2b_edited([](json& j) { j["text_config"]["rope_parameters"]["full_attention"]["rope_type"] = "yarn"; }), kUnsup,
      "config.json: text_config.rope_parameters.full_attention.rope_type: \"yarn\" is not supported (expected "
      "\"default\" or \"proportional\")");
  expect_config_error(
      e2b_edited([](json& j) { j["text_config"]["rope_parameters"]["sliding_attention"]["factor"] = 8.0; }), kUnsup,
      "config.json: text_config.rope_parameters.sliding_attention.factor: rope scaling factor 8.0 is not supported "
      "(the runtime computes unscaled RoPE, factor 1)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_activation"] = "gelu"; }), kUnsup,
                      "config.json: text_config.hidden_activation: activation \"gelu\" is not supported (the runtime "
                      "computes only \"gelu_pytorch_tanh\")");
  expect_config_error(e2b_edited([](json& j) { j["vision_config"]["hidden_activation"] = "silu"; }), kUnsup,
                      "config.json: vision_config.hidden_activation: activation \"silu\" is not supported (the runtime "
                      "computes only \"gelu_pytorch_tanh\")");
  expect_config_error(e2b_edited([](json& j) { j["vision_config"]["rope_parameters"]["rope_type"] = "proportional"; }),
                      kUnsup,
                      "config.json: vision_config.rope_parameters.rope_type: \"proportional\" is not supported "
                      "(expected \"default\")");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["use_bidirectional_attention"] = "vision"; }), kUnsup,
                      "config.json: text_config.use_bidirectional_attention: \"vision\" is not supported (the runtime "
                      "builds causal masks only; E2B has null)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["attention_bias"] = true; }), kUnsup,
                      "config.json: text_config.attention_bias: attention projection biases are not supported "
                      "(Gemma 4 has none)");
  expect_config_error(e2b_edited([](json& j) { j["tie_word_embeddings"] = false; }), kUnsup,
                      "config.json: tie_word_embeddings: an untied lm_head is not supported (the runtime's head reads "
                      "embed_tokens)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["tie_word_embeddings"] = false; }), kUnsup,
                      "config.json: text_config.tie_word_embeddings: an untied lm_head is not supported (the runtime's "
                      "head reads embed_tokens)");
}

TEST(ConfigErrors, ImpossibleValues) {
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_size"] = 0; }), kFile,
                      "config.json: text_config.hidden_size: expected a positive integer, got 0");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["num_key_value_heads"] = 3; }), kFile,
                      "config.json: text_config.num_attention_heads: 8 is not a multiple of num_key_value_heads = 3");
  expect_config_error(
      e2b_edited([](json& j) { j["text_config"]["head_dim"] = 255; }), kFile,
      "config.json: text_config.head_dim: 255 is not a multiple of 2 (RoPE rotates pairs of dimensions)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["num_kv_shared_layers"] = 35; }), kFile,
                      "config.json: text_config.num_kv_shared_layers: 35 is out of range (expected 0 to "
                      "num_hidden_layers - 1 = 34)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_size_per_layer_input"] = -1; }), kFile,
                      "config.json: text_config.hidden_size_per_layer_input: expected 0 (no PLE) or a positive "
                      "integer, got -1");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["eos_token_id"] = 262144; }), kFile,
                      "config.json: text_config.eos_token_id: token id 262144 is outside the vocabulary (vocab_size = "
                      "262144)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["pad_token_id"] = 999999; }), kFile,
                      "config.json: text_config.pad_token_id: token id 999999 is outside the vocabulary (vocab_size = "
                      "262144)");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["bos_token_id"] = -5; }), kFile,
                      "config.json: text_config.bos_token_id: token id -5 is outside the vocabulary (vocab_size = "
                      "262144)");
  expect_config_error(e2b_edited([](json& j) { j["image_token_id"] = -7; }), kFile,
                      "config.json: image_token_id: token id -7 is negative (expected a row of embed_tokens)");
  expect_config_error(e2b_edited([](json& j) { j["eoa_token_id"] = -1; }), kFile,
                      "config.json: eoa_token_id: token id -1 is negative (expected a row of embed_tokens)");
  expect_config_error(e2b_edited([](json& j) { j["vision_config"]["head_dim"] = 66; }), kFile,
                      "config.json: vision_config.head_dim: 66 is not a multiple of 4 (2-D RoPE rotates pairs in an x "
                      "half and a y half)");
  expect_config_error(
      e2b_edited([](json& j) { j["vision_config"]["num_key_value_heads"] = 5; }), kFile,
      "config.json: vision_config.num_attention_heads: 12 is not a multiple of num_key_value_heads = 5");
}

TEST(ConfigErrors, SizeLimits) {
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["num_hidden_layers"] = 5000; }), kFile,
                      "config.json: text_config.num_hidden_layers: 5000 is larger than the 4096 this runtime accepts");
  expect_config_error(
      e2b_edited([](json& j) { j["vision_config"]["num_hidden_layers"] = 4097; }), kFile,
      "config.json: vision_config.num_hidden_layers: 4097 is larger than the 4096 this runtime accepts");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_size"] = 16777217; }), kFile,
                      "config.json: text_config.hidden_size: 16777217 is larger than the 16777216 this runtime "
                      "accepts");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["hidden_size_per_layer_input"] = 1 << 25; }), kFile,
                      "config.json: text_config.hidden_size_per_layer_input: 33554432 is larger than the 16777216 this "
                      "runtime accepts");
}

TEST(ConfigErrors, LayerTable) {
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["layer_types"].erase(0); }), kFile,
                      "config.json: text_config.layer_types: has 34 entries, expected num_hidden_layers = 35");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["layer_types"][7] = "chunked_attention"; }), kFile,
                      "config.json: text_config.layer_types[7]: unknown layer type \"chunked_attention\" (expected "
                      "\"sliding_attention\" or \"full_attention\")");
  expect_config_error(e2b_edited([](json& j) { j["text_config"]["rope_parameters"].erase("full_attention"); }), kFile,
                      "config.json: text_config.rope_parameters: no entry for \"full_attention\" (used by layer 4)");
  // Only full layers before the first shared one: a sliding shared layer has no donor.
  expect_config_error(e2b_edited([](json& j) {
                        auto& lt = j["text_config"]["layer_types"];
                        for (int i = 0; i < 15; ++i) lt[i] = "full_attention";
                      }),
                      kFile,
                      "config.json: text_config.num_kv_shared_layers: layer 15 (sliding_attention) shares K/V but no "
                      "layer before 15 has that type");
  for (const double theta : {1.0, 1e-300, -5.0}) {
    expect_config_error(
        e2b_edited([&](json& j) { j["text_config"]["rope_parameters"]["sliding_attention"]["rope_theta"] = theta; }), kFile,
        "config.json: text_config.rope_parameters.sliding_attention.rope_theta: expected a finite number greater than 1 "
        "(the RoPE base), got " + json(theta).dump());
  }
  expect_config_error(
      e2b_edited([](json& j) { j["text_config"]["rope_parameters"]["full_attention"]["partial_rotary_factor"] = 0.0; }),
      kFile,
      "config.json: text_config.rope_parameters.full_attention.partial_rotary_factor: expected a number in (0, 1]");
  // Default RoPE on 512-wide full layers: upstream would size its table by head_dim 256.
  expect_config_error(
      e2b_edited([](json& j) {
        j["text_config"]["rope_parameters"]["full_attention"] = {{"rope_type", "default"}, {"rope_theta", 10000.0}};
      }),
      kUnsup,
      "config.json: text_config.rope_parameters.full_attention: rope_type \"default\" on layer 4 "
      "(head_dim 512) is not supported: upstream sizes the default RoPE by head_dim = 256");
}

TEST(ConfigErrors, PerLayerConfig) {
  expect_config_error(e2b_edited([](json& j) {
                        j["text_config"]["per_layer_config"] = {{"four", {{"head_dim", 512}}}};
                      }),
                      kFile, "config.json: text_config.per_layer_config: key \"four\" is not a layer index");
  expect_config_error(e2b_edited([](json& j) {
                        j["text_config"]["per_layer_config"] = {{"35", {{"head_dim", 512}}}};
                      }),
                      kFile,
                      "config.json: text_config.per_layer_config: layer 35 is out of range (num_hidden_layers = 35)");
  expect_config_error(e2b_edited([](json& j) {
                        j["text_config"]["per_layer_config"] = {{"4", {{"head_dim", 512}}}, {"004", json::object()}};
                      }),
                      kFile, "config.json: text_config.per_layer_config: layer 4 is listed twice");
  expect_config_error(e2b_edited([](json& j) {
                        j["text_config"]["per_layer_config"] = {{"4", {{"head_dim", "512"}}}};
                      }),
                      kFile, "config.json: text_config.per_layer_config.4.head_dim: expected an integer, got \"512\"");
  // Layer 34 (full, shared) reads layer 14's K/V, which would be 256 wide while 34's is 512.
  expect_config_error(e2b_edited([](json& j) {
                        j["text_config"]["per_layer_config"] = {{"34", {{"head_dim", 512}}}};
                      }),
                      kFile,
                      "config.json: text_config.per_layer_config: layer 34 reads K/V of layer 14 but their head_dim / "
                      "num_key_value_heads differ");
}

TEST(ConfigErrors, GenerationConfig) {
  auto expect_gen = [](const std::string& text, const std::string& message) {
    test::expect_error([&] { parse_generation_config(text, "generation_config.json"); }, kFile, message);
  };
  expect_gen(R"({"eos_token_id": "1"})", "generation_config.json: eos_token_id: expected an integer, got \"1\"");
  expect_gen(R"({"eos_token_id": [1, 1.5]})", "generation_config.json: eos_token_id[1]: expected an integer, got 1.5");
  expect_gen(R"({"temperature": "hot"})", "generation_config.json: temperature: expected a number, got \"hot\"");
  expect_gen(R"({"do_sample": "yes"})", "generation_config.json: do_sample: expected true or false, got \"yes\"");
  expect_gen(R"({"top_p": 1.5})", "generation_config.json: top_p: expected a number in [0, 1]");
  expect_gen(R"({"top_k": -1})", "generation_config.json: top_k: expected an integer >= 0");
  expect_gen("7", "generation_config.json: expected a JSON object at the top level, got 7");
}

// Inputs the config fuzzer found (fuzz/regressions/config/, minimised by hand): each is refused
// as an invalid config.json, never reported as an internal error.
TEST(ConfigErrors, FuzzRegressions) {
  const std::filesystem::path dir = std::filesystem::path(test::fixture("")) / "../../fuzz/regressions/config";
  int seen = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++seen;
    try {
      parse_model_config(read_file(e.path().string()), "config.json");
      ADD_FAILURE() << e.path() << " was accepted";
    } catch (const Error& err) {
      EXPECT_EQ(err.kind(), kFile) << e.path() << ": " << err.what();
      EXPECT_EQ(std::string(err.what()).rfind("config.json: not valid JSON", 0), 0u) << err.what();
    }
  }
  EXPECT_GE(seen, 1) << dir;
}

}  // namespace
}  // namespace staticlm
