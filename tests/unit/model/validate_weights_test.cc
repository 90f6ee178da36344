// validate_weights on a real (tiny) safetensors checkpoint written with SafetensorsWriter.
#include <gtest/gtest.h>

#include <map>

#include "model/weights.h"
#include "model_test_util.h"
#include "tensor/safetensors.h"

namespace staticlm {
namespace {

// A small multimodal config with every kind of tensor: PLE, a KV-shared layer, clipped vision linears.
const char* kTinyConfig = R"({
  "model_type": "gemma4",
  "text_config": {"vocab_size": 32, "vocab_size_per_layer_input": 32, "hidden_size": 8, "intermediate_size": 16,
                  "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
                  "global_head_dim": 8, "hidden_size_per_layer_input": 4, "num_kv_shared_layers": 1,
                  "use_double_wide_mlp": true, "layer_types": ["sliding_attention", "full_attention",
                  "full_attention"]},
  "vision_config": {"hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                    "num_key_value_heads": 2, "head_dim": 4, "patch_size": 2, "position_embedding_size": 8,
                    "use_clipped_linears": true}
})";

// Writes every tensor of `shapes` as BF16 zeros into one file.
void write_checkpoint(const std::string& path, const std::map<std::string, Shape>& shapes) {
  SafetensorsWriter w;
  for (const auto& [name, shape] : shapes) {
    const std::size_t bytes = dtype_bytes(DType::kBF16, static_cast<std::size_t>(shape.numel()));
    w.add(name, DType::kBF16, shape, [bytes](ByteSink& s) {
      const std::vector<std::uint8_t> zeros(bytes, 0);
      s.write(zeros.data(), zeros.size());
    });
  }
  w.write(path);
}

TEST(ValidateWeights, TinyCheckpoint) {
  const ModelConfig c = parse_model_config(kTinyConfig, "config.json");
  std::map<std::string, Shape> shapes;
  for (const WeightSpec& s : expected_weights(c)) shapes[s.name] = s.shape;
  // Spot checks of the tiny shapes: shared layer 2 has a double-wide MLP and no k_proj.
  EXPECT_EQ(shapes.at("model.language_model.layers.2.mlp.gate_proj.weight"), (Shape{32, 8}));
  EXPECT_EQ(shapes.at("model.language_model.layers.1.self_attn.k_proj.weight"), (Shape{8, 8}));
  EXPECT_EQ(shapes.count("model.language_model.layers.2.self_attn.k_proj.weight"), 0u);
  EXPECT_EQ(shapes.at("model.vision_tower.patch_embedder.input_proj.weight"), (Shape{8, 12}));

  test::TempDir dir;
  const std::string good = dir.file("good.safetensors");
  shapes["lm_head.weight"] = Shape{32, 8};  // extra tensors are allowed
  write_checkpoint(good, shapes);
  EXPECT_NO_THROW(validate_weights(c, *TensorStore::open_file(good)));

  shapes.erase("model.language_model.layers.0.mlp.down_proj.weight");
  shapes["model.vision_tower.encoder.layers.0.self_attn.k_proj.input_max"] = Shape{1};
  const std::string bad = dir.file("bad.safetensors");
  write_checkpoint(bad, shapes);
  test::expect_error([&] { validate_weights(c, *TensorStore::open_file(bad)); }, ErrorKind::kInvalidFile,
                     bad +
                         ": does not match the model config: 2 problems: missing "
                         "model.language_model.layers.0.mlp.down_proj.weight [8, 16]; "
                         "model.vision_tower.encoder.layers.0.self_attn.k_proj.input_max has shape [1], expected []");
}

}  // namespace
}  // namespace staticlm
