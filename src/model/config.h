// A Hugging Face Gemma 4 checkpoint's configuration as typed structs: config.json (the
// multimodal Gemma4ForConditionalGeneration layout with text_config / vision_config, or the
// text-only Gemma4ForCausalLM layout, model_type "gemma4_text") and generation_config.json.
// Every field of spec/gemma4.md section 1 is here with its class default; field names are the
// upstream ones. All structs are plain values: the caller owns them, nothing points elsewhere.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace staticlm {

inline constexpr const char* kSlidingAttention = "sliding_attention";
inline constexpr const char* kFullAttention = "full_attention";

// The only activation the runtime computes (text and vision): 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
inline constexpr const char* kGeluPytorchTanh = "gelu_pytorch_tanh";

struct RopeParameters {
  std::string rope_type = "default";  // "default" or "proportional"; anything else is refused
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;  // proportional only
  double factor = 1.0;                 // scaling factor; must be 1
  bool operator==(const RopeParameters&) const = default;
};

// One entry of the newer HF `per_layer_config` ({"4": {"head_dim": 512}, ...}); unset fields
// keep the text config's value.
struct LayerOverride {
  std::optional<std::int64_t> head_dim;
  std::optional<std::int64_t> num_attention_heads;
  std::optional<std::int64_t> num_key_value_heads;
  bool operator==(const LayerOverride&) const = default;
};

struct TextConfig {
  std::int64_t vocab_size = 262144;
  std::int64_t hidden_size = 2304;
  std::int64_t intermediate_size = 9216;
  std::int64_t num_hidden_layers = 30;
  std::int64_t num_attention_heads = 8;
  std::int64_t num_key_value_heads = 4;
  std::int64_t head_dim = 256;
  std::int64_t global_head_dim = 512;                      // full layers; null in the file means head_dim
  std::optional<std::int64_t> num_global_key_value_heads;  // null in E2B; only with attention_k_eq_v
  // Newer HF configs describe full layers here instead of global_head_dim. When it is present
  // it is authoritative (global_head_dim is then ignored, as upstream does): a layer without an
  // entry uses head_dim / num_attention_heads / num_key_value_heads.
  std::map<int, LayerOverride> per_layer_config;
  bool attention_k_eq_v = false;
  std::string hidden_activation = kGeluPytorchTanh;
  std::int64_t max_position_embeddings = 131072;
  double rms_norm_eps = 1e-6;
  std::int64_t pad_token_id = 0;
  std::vector<std::int64_t> eos_token_id = {1};  // an int or a list in the file
  std::int64_t bos_token_id = 2;
  bool tie_word_embeddings = true;
  bool attention_bias = false;
  std::int64_t sliding_window = 512;
  // Default: 5 sliding then 1 full, repeated (full at 5, 11, 17, ...); the last layer is always
  // forced to full, as upstream does.
  std::vector<std::string> layer_types;
  std::map<std::string, RopeParameters> rope_parameters;   // keyed by layer type
  std::optional<double> final_logit_softcapping;           // E2B: 30
  std::optional<std::string> use_bidirectional_attention;  // E2B: null
  std::int64_t vocab_size_per_layer_input = 262144;
  std::int64_t hidden_size_per_layer_input = 256;  // 0 turns PLE off
  std::int64_t num_kv_shared_layers = 0;
  bool use_double_wide_mlp = false;
  bool enable_moe_block = false;
  std::optional<std::int64_t> num_experts;
  std::optional<std::int64_t> top_k_experts;
  std::optional<std::int64_t> moe_intermediate_size;
  double attention_dropout = 0.0;
  double initializer_range = 0.02;
  bool use_cache = true;
  bool operator==(const TextConfig&) const = default;
};

struct VisionConfig {
  std::int64_t hidden_size = 768;
  std::int64_t intermediate_size = 3072;
  std::int64_t num_hidden_layers = 16;
  std::int64_t num_attention_heads = 12;
  std::int64_t num_key_value_heads = 12;
  std::int64_t head_dim = 64;
  std::int64_t global_head_dim = 64;  // stored, unused
  std::string hidden_activation = kGeluPytorchTanh;
  double rms_norm_eps = 1e-6;
  std::int64_t patch_size = 16;
  std::int64_t pooling_kernel_size = 3;
  std::int64_t position_embedding_size = 10240;
  RopeParameters rope_parameters{"default", 100.0, 1.0, 1.0};
  bool use_clipped_linears = false;  // newest HF default; shipped E2B configs say true
  bool standardize = false;          // true adds std_bias / std_scale [hidden_size]
  std::int64_t default_output_length = 280;
  bool attention_bias = false;  // read and written back; upstream vision linears have no bias
  std::int64_t max_position_embeddings = 131072;
  double attention_dropout = 0.0;
  double initializer_range = 0.02;
  bool operator==(const VisionConfig&) const = default;
};

// Parsed when present; the runtime does not run the audio tower.
struct AudioConfig {
  std::int64_t hidden_size = 1024;
  std::int64_t num_hidden_layers = 12;
  std::int64_t num_attention_heads = 8;
  std::string hidden_act = "silu";
  std::vector<std::int64_t> subsampling_conv_channels = {128, 32};
  std::int64_t conv_kernel_size = 5;
  double residual_weight = 0.5;
  std::int64_t attention_chunk_size = 12;
  std::int64_t attention_context_left = 13;
  std::int64_t attention_context_right = 0;
  double attention_logit_cap = 50.0;
  double attention_invalid_logits_value = -1e9;
  bool use_clipped_linears = true;
  double rms_norm_eps = 1e-6;
  double gradient_clipping = 1e10;
  std::int64_t output_proj_dims = 1536;
  double initializer_range = 0.02;
  bool operator==(const AudioConfig&) const = default;
};

struct ModelConfig {
  // "Gemma4ForConditionalGeneration" (multimodal) or "Gemma4ForCausalLM" (text only).
  std::string architecture = "Gemma4ForConditionalGeneration";
  std::string model_type = "gemma4";  // "gemma4" or "gemma4_text"
  bool multimodal() const { return model_type == "gemma4"; }

  // quantization_config.scheme of a `staticlm quantize` output ("q8", "q4" or "npu-w4"); absent
  // for a float checkpoint. Another tool's quantization_config is refused when parsed.
  std::optional<std::string> quantization_scheme;

  TextConfig text;
  std::optional<VisionConfig> vision;  // absent in the text-only layout (or vision_config null)
  std::optional<AudioConfig> audio;

  // Top level (multimodal layout).
  std::int64_t boi_token_id = 255999;
  std::int64_t eoi_token_id = 258882;
  std::optional<std::int64_t> image_token_id = 258880;  // read from the top level, never text_config
  std::int64_t video_token_id = 258884;
  std::int64_t boa_token_id = 256000;
  std::int64_t eoa_token_id = 258883;  // "eoa_token_index" upstream; shipped files carry both names
  std::int64_t audio_token_id = 258881;
  std::int64_t vision_soft_tokens_per_image = 280;
  // Top-level list, e.g. [1, 106] for IT; absent means text_config's. Text-only layout: the same
  // as text.eos_token_id.
  std::vector<std::int64_t> eos_token_id = {1};
  bool tie_word_embeddings = true;  // top level of the multimodal layout; must be true
  std::string dtype = "bfloat16";

  // Prefix of the text tensors: "model.language_model." (multimodal) or "model." (text only).
  std::string text_prefix() const { return multimodal() ? "model.language_model." : "model."; }

  bool operator==(const ModelConfig&) const = default;
};

struct GenerationConfig {
  std::vector<std::int64_t> eos_token_id;  // may be a list in the file, e.g. [1, 106, 50]
  std::optional<std::int64_t> pad_token_id;
  std::optional<std::int64_t> bos_token_id;
  bool do_sample = false;
  std::optional<double> temperature;
  std::optional<std::int64_t> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<double> typical_p;
  std::optional<double> repetition_penalty;
  std::optional<std::int64_t> max_new_tokens;
  bool operator==(const GenerationConfig&) const = default;
};

// Parses config.json text; `source` names the file in error messages. Missing fields take the
// class defaults above; unknown fields are ignored. A field of the wrong JSON type, or a value
// that cannot describe a model (zero sizes, heads not divisible by KV heads, a bad layer table),
// is kInvalidFile naming the file and the field, e.g.
//   config.json: text_config.hidden_size: expected an integer, got "abc"
// Refuses (kUnsupported, saying what and why) MoE, attention_k_eq_v, bidirectional attention,
// attention biases, untied embeddings, an unknown rope_type, a rope scaling factor other than
// 1, and an activation other than gelu_pytorch_tanh.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
// Reads <checkpoint_dir>/config.json; errors name that path.
ModelConfig load_model_config(const std::string& checkpoint_dir);

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& source);
// nullopt when the directory has no generation_config.json.
std::optional<GenerationConfig> load_generation_config(const std::string& checkpoint_dir);

// config.json text for a config (what make-model writes), in the HF layout of its model_type,
// keys sorted; parse_model_config reads it back equal.
std::string model_config_to_json(const ModelConfig& config);
// generation_config.json text: eos_token_id as a list, unset optional fields left out.
std::string generation_config_to_json(const GenerationConfig& config);

}  // namespace staticlm
