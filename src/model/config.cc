// config.json / generation_config.json <-> ModelConfig / GenerationConfig. Field names, defaults
// and the two layouts follow configuration_gemma4.py (spec/gemma4.md section 1).
#include "model/config.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/error.h"
#include "base/file.h"
#include "model/layer_table.h"
#include "quant/formats.h"

namespace staticlm {
namespace {

using nlohmann::json;

// A JSON value as it would appear in the file, cut short so a message stays one line.
std::string describe(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 48) s = s.substr(0, 45) + "...";
  return s;
}

std::optional<std::int64_t> as_int(const json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return std::nullopt;
}

// Typed reads from one JSON object; every message names the file and the dotted field path.
// A missing key leaves the output untouched (the class default).
class Fields {
 public:
  Fields(const json& obj, std::string source, std::string prefix)
      : obj_(obj), source_(std::move(source)), prefix_(std::move(prefix)) {}

  const json* find(const std::string& key) const {
    auto it = obj_.find(key);
    return it == obj_.end() ? nullptr : &*it;
  }
  std::string where(const std::string& key) const { return source_ + ": " + prefix_ + key; }
  const std::string& source() const { return source_; }
  const std::string& prefix() const { return prefix_; }

  [[noreturn]] void wrong(const std::string& key, const char* expected, const json& got) const {
    invalid_file(where(key) + ": expected " + expected + ", got " + describe(got));
  }

  void get(const std::string& key, std::int64_t& out) const {
    if (const json* v = find(key)) out = to_int(key, *v);
  }
  void get(const std::string& key, std::optional<std::int64_t>& out) const {
    if (const json* v = find(key)) out = v->is_null() ? std::nullopt : std::optional(to_int(key, *v));
  }
  void get(const std::string& key, double& out) const {
    if (const json* v = find(key)) out = to_double(key, *v);
  }
  void get(const std::string& key, std::optional<double>& out) const {
    if (const json* v = find(key)) out = v->is_null() ? std::nullopt : std::optional(to_double(key, *v));
  }
  void get(const std::string& key, bool& out) const {
    if (const json* v = find(key)) {
      if (!v->is_boolean()) wrong(key, "true or false", *v);
      out = v->get<bool>();
    }
  }
  void get(const std::string& key, std::string& out) const {
    if (const json* v = find(key)) {
      if (!v->is_string()) wrong(key, "a string", *v);
      out = v->get<std::string>();
    }
  }
  void get(const std::string& key, std::optional<std::string>& out) const {
    if (const json* v = find(key)) {
      if (v->is_null()) {
        out.reset();
        return;
      }
      if (!v->is_string()) wrong(key, "a string or null", *v);
      out = v->get<std::string>();
    }
  }
  // An integer, a list of integers, or null (an empty list): eos_token_id.
  void get_int_list(const std::string& key, std::vector<std::int64_t>& out) const {
    const json* v = find(key);
    if (v == nullptr) return;
    out.clear();
    if (v->is_null()) return;
    if (!v->is_array()) {
      out.push_back(to_int(key, *v));
      return;
    }
    for (std::size_t i = 0; i < v->size(); ++i) out.push_back(to_int(key + "[" + std::to_string(i) + "]", (*v)[i]));
  }
  void get_string_list(const std::string& key, std::vector<std::string>& out) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return;
    if (!v->is_array()) wrong(key, "a list of strings", *v);
    out.clear();
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_string()) wrong(key + "[" + std::to_string(i) + "]", "a string", e);
      out.push_back(e.get<std::string>());
    }
  }
  // A nested object; nullopt when absent or null.
  std::optional<Fields> object(const std::string& key) const {
    const json* v = find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_object()) wrong(key, "an object", *v);
    return Fields(*v, source_, prefix_ + key + ".");
  }

 private:
  std::int64_t to_int(const std::string& key, const json& v) const {
    auto i = as_int(v);
    if (!i) wrong(key, "an integer", v);
    return *i;
  }
  double to_double(const std::string& key, const json& v) const {
    if (!v.is_number()) wrong(key, "a number", v);
    return v.get<double>();
  }

  const json& obj_;
  std::string source_;
  std::string prefix_;
};

// Upper bounds that no real model reaches; they keep tables and element counts derived from a
// config small enough to allocate and to count in 64 bits.
constexpr std::int64_t kMaxExtent = std::int64_t{1} << 24;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

void require_positive(const Fields& f, const std::string& key, std::int64_t value, std::int64_t max = kMaxExtent) {
  if (value <= 0) invalid_file(f.where(key) + ": expected a positive integer, got " + std::to_string(value));
  if (value > max)
    invalid_file(f.where(key) + ": " + std::to_string(value) + " is larger than the " + std::to_string(max) +
                 " this runtime accepts");
}

// `what` describes the divisor in the message, e.g. "num_key_value_heads = 4".
void require_multiple(const Fields& f, const std::string& key, std::int64_t value, std::int64_t divisor,
                      const std::string& what) {
  if (value % divisor != 0) invalid_file(f.where(key) + ": " + std::to_string(value) + " is not a multiple of " + what);
}

void require_heads_divisible(const Fields& f, std::int64_t heads, std::int64_t kv_heads) {
  require_multiple(f, "num_attention_heads", heads, kv_heads, "num_key_value_heads = " + std::to_string(kv_heads));
}

constexpr const char* kRopePairs = "2 (RoPE rotates pairs of dimensions)";

void check_activation(const Fields& f, const std::string& key, const std::string& act) {
  if (act != kGeluPytorchTanh)
    unsupported(f.where(key) + ": activation \"" + act + "\" is not supported (the runtime computes only \"" +
                kGeluPytorchTanh + "\")");
}

// ---- RoPE ----------------------------------------------------------------------------------

RopeParameters parse_rope(const Fields& f, RopeParameters r) {
  f.get("rope_type", r.rope_type);
  f.get("rope_theta", r.rope_theta);
  f.get("partial_rotary_factor", r.partial_rotary_factor);
  f.get("factor", r.factor);
  return r;
}

void check_rope(const Fields& f, const std::string& key, const RopeParameters& r, bool allow_proportional) {
  const bool known = r.rope_type == "default" || (allow_proportional && r.rope_type == "proportional");
  if (!known)
    unsupported(f.where(key + ".rope_type") + ": \"" + r.rope_type + "\" is not supported (expected " +
                (allow_proportional ? "\"default\" or \"proportional\"" : "\"default\"") + ")");
  if (r.factor != 1.0)
    unsupported(f.where(key + ".factor") + ": rope scaling factor " + describe(json(r.factor)) +
                " is not supported (the runtime computes unscaled RoPE, factor 1)");
  // A base of 1 or less makes every frequency 1 or more and an extreme one (1e-300) makes them
  // infinite: the logits came out NaN many steps later.
  if (!(r.rope_theta > 1) || !std::isfinite(r.rope_theta)) {
    invalid_file(f.where(key + ".rope_theta") + ": expected a finite number greater than 1 (the RoPE base), got " +
                 describe(json(r.rope_theta)));
  }
}

// rope_parameters is either one dict (rope_type/rope_theta at its top, applied to every layer
// type) or a dict per layer type, as E2B ships it.
std::map<std::string, RopeParameters> parse_text_rope(const Fields& f) {
  std::map<std::string, RopeParameters> out;
  const auto rp = f.object("rope_parameters");
  if (!rp) {
    out[kSlidingAttention] = RopeParameters{"default", 10000.0, 1.0, 1.0};
    out[kFullAttention] = RopeParameters{"proportional", 1000000.0, 0.25, 1.0};
    return out;
  }
  if (rp->find("rope_type") || rp->find("rope_theta")) {
    const RopeParameters one = parse_rope(*rp, RopeParameters{});
    out[kSlidingAttention] = one;
    out[kFullAttention] = one;
    return out;
  }
  const json& obj = *f.find("rope_parameters");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (auto sub = rp->object(it.key())) out[it.key()] = parse_rope(*sub, RopeParameters{});
  }
  return out;
}

// ---- text_config -----------------------------------------------------------------------------

std::map<int, LayerOverride> parse_per_layer_config(const Fields& f, std::int64_t num_layers) {
  std::map<int, LayerOverride> out;
  const auto plc = f.object("per_layer_config");
  if (!plc) return out;
  const json& obj = *f.find("per_layer_config");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    const bool digits = !key.empty() && key.size() <= 9 && key.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) invalid_file(f.where("per_layer_config") + ": key \"" + key + "\" is not a layer index");
    const int index = std::stoi(key);
    if (index >= num_layers)
      invalid_file(f.where("per_layer_config") + ": layer " + key +
                   " is out of range (num_hidden_layers = " + std::to_string(num_layers) + ")");
    if (out.count(index))
      invalid_file(f.where("per_layer_config") + ": layer " + std::to_string(index) + " is listed twice");
    const auto entry = plc->object(key);
    LayerOverride o;
    if (entry) {
      entry->get("head_dim", o.head_dim);
      entry->get("num_attention_heads", o.num_attention_heads);
      entry->get("num_key_value_heads", o.num_key_value_heads);
      if (o.head_dim) require_positive(*entry, "head_dim", *o.head_dim);
      if (o.num_attention_heads) require_positive(*entry, "num_attention_heads", *o.num_attention_heads);
      if (o.num_key_value_heads) require_positive(*entry, "num_key_value_heads", *o.num_key_value_heads);
    }
    out[index] = o;
  }
  return out;
}

// Refusals: valid configs of other Gemma 4 variants that this runtime does not compute.
void check_text_supported(const Fields& f, const TextConfig& t) {
  if (t.enable_moe_block)
    unsupported(f.where("enable_moe_block") +
                ": mixture-of-experts blocks (as in gemma-4-26B-A4B) are not supported by this runtime");
  if (t.attention_k_eq_v)
    unsupported(f.where("attention_k_eq_v") +
                ": full-attention layers that reuse keys as values (as in gemma-4-31B) are not supported by "
                "this runtime");
  if (t.use_bidirectional_attention)
    unsupported(f.where("use_bidirectional_attention") + ": \"" + *t.use_bidirectional_attention +
                "\" is not supported (the runtime builds causal masks only; E2B has null)");
  if (t.attention_bias)
    unsupported(f.where("attention_bias") + ": attention projection biases are not supported (Gemma 4 has none)");
  if (!t.tie_word_embeddings)
    unsupported(f.where("tie_word_embeddings") +
                ": an untied lm_head is not supported (the runtime's head reads embed_tokens)");
  check_activation(f, "hidden_activation", t.hidden_activation);
  for (const auto& [type, rope] : t.rope_parameters) check_rope(f, "rope_parameters." + type, rope, true);
}

void check_text_values(const Fields& f, const TextConfig& t) {
  require_positive(f, "vocab_size", t.vocab_size);
  require_positive(f, "hidden_size", t.hidden_size);
  require_positive(f, "intermediate_size", t.intermediate_size);
  require_positive(f, "num_hidden_layers", t.num_hidden_layers, kMaxLayers);
  require_positive(f, "num_attention_heads", t.num_attention_heads);
  require_positive(f, "num_key_value_heads", t.num_key_value_heads);
  require_heads_divisible(f, t.num_attention_heads, t.num_key_value_heads);
  require_positive(f, "head_dim", t.head_dim);
  require_multiple(f, "head_dim", t.head_dim, 2, kRopePairs);
  require_positive(f, "global_head_dim", t.global_head_dim);
  require_multiple(f, "global_head_dim", t.global_head_dim, 2, kRopePairs);
  require_positive(f, "sliding_window", t.sliding_window, kNoLimit);
  require_positive(f, "max_position_embeddings", t.max_position_embeddings, kNoLimit);
  if (!(t.rms_norm_eps > 0)) invalid_file(f.where("rms_norm_eps") + ": expected a positive number");
  if (t.final_logit_softcapping && !(*t.final_logit_softcapping > 0))
    invalid_file(f.where("final_logit_softcapping") + ": expected a positive number or null");
  if (t.hidden_size_per_layer_input < 0)
    invalid_file(f.where("hidden_size_per_layer_input") + ": expected 0 (no PLE) or a positive integer, got " +
                 std::to_string(t.hidden_size_per_layer_input));
  if (t.hidden_size_per_layer_input > 0)
    require_positive(f, "hidden_size_per_layer_input", t.hidden_size_per_layer_input);
  if (t.hidden_size_per_layer_input > 0)
    require_positive(f, "vocab_size_per_layer_input", t.vocab_size_per_layer_input);
  if (t.num_kv_shared_layers < 0 || t.num_kv_shared_layers >= t.num_hidden_layers)
    invalid_file(f.where("num_kv_shared_layers") + ": " + std::to_string(t.num_kv_shared_layers) +
                 " is out of range (expected 0 to num_hidden_layers - 1 = " + std::to_string(t.num_hidden_layers - 1) +
                 ")");
  // pad fills the static input's tail and bos starts bench / quant-report prompts: both are looked up
  // in embed_tokens, so they must be rows of it.
  for (const auto& [key, id] : {std::pair<const char*, std::int64_t>{"pad_token_id", t.pad_token_id},
                                {"bos_token_id", t.bos_token_id}})
    if (id < 0 || id >= t.vocab_size)
      invalid_file(f.where(key) + ": token id " + std::to_string(id) + " is outside the vocabulary (vocab_size = " +
                   std::to_string(t.vocab_size) + ")");
  for (std::size_t i = 0; i < t.eos_token_id.size(); ++i)
    if (t.eos_token_id[i] < 0 || t.eos_token_id[i] >= t.vocab_size)
      invalid_file(f.where("eos_token_id") + ": token id " + std::to_string(t.eos_token_id[i]) +
                   " is outside the vocabulary (vocab_size = " + std::to_string(t.vocab_size) + ")");
}

TextConfig parse_text(const Fields& f) {
  TextConfig t;
  std::string model_type = "gemma4_text";
  f.get("model_type", model_type);
  if (model_type != "gemma4_text")
    unsupported(f.where("model_type") + ": \"" + model_type + "\" is not supported (expected \"gemma4_text\")");
  f.get("vocab_size", t.vocab_size);
  f.get("hidden_size", t.hidden_size);
  f.get("intermediate_size", t.intermediate_size);
  f.get("num_hidden_layers", t.num_hidden_layers);
  f.get("num_attention_heads", t.num_attention_heads);
  f.get("num_key_value_heads", t.num_key_value_heads);
  f.get("head_dim", t.head_dim);
  // Upstream: a null (or 0) global_head_dim means full layers use head_dim.
  std::optional<std::int64_t> global_head_dim = t.global_head_dim;
  f.get("global_head_dim", global_head_dim);
  t.global_head_dim = global_head_dim.value_or(0) == 0 ? t.head_dim : *global_head_dim;
  f.get("num_global_key_value_heads", t.num_global_key_value_heads);
  f.get("attention_k_eq_v", t.attention_k_eq_v);
  f.get("hidden_activation", t.hidden_activation);
  f.get("max_position_embeddings", t.max_position_embeddings);
  f.get("rms_norm_eps", t.rms_norm_eps);
  f.get("pad_token_id", t.pad_token_id);
  f.get_int_list("eos_token_id", t.eos_token_id);
  f.get("bos_token_id", t.bos_token_id);
  f.get("tie_word_embeddings", t.tie_word_embeddings);
  f.get("attention_bias", t.attention_bias);
  f.get("sliding_window", t.sliding_window);
  f.get_string_list("layer_types", t.layer_types);
  f.get("final_logit_softcapping", t.final_logit_softcapping);
  f.get("use_bidirectional_attention", t.use_bidirectional_attention);
  f.get("vocab_size_per_layer_input", t.vocab_size_per_layer_input);
  f.get("hidden_size_per_layer_input", t.hidden_size_per_layer_input);
  f.get("num_kv_shared_layers", t.num_kv_shared_layers);
  f.get("use_double_wide_mlp", t.use_double_wide_mlp);
  f.get("enable_moe_block", t.enable_moe_block);
  f.get("num_experts", t.num_experts);
  f.get("top_k_experts", t.top_k_experts);
  f.get("moe_intermediate_size", t.moe_intermediate_size);
  f.get("attention_dropout", t.attention_dropout);
  f.get("initializer_range", t.initializer_range);
  f.get("use_cache", t.use_cache);
  t.rope_parameters = parse_text_rope(f);

  check_text_supported(f, t);
  check_text_values(f, t);
  t.per_layer_config = parse_per_layer_config(f, t.num_hidden_layers);
  if (t.layer_types.empty()) t.layer_types = default_layer_types(t.num_hidden_layers);
  // Upstream forces the last layer to full attention (with a warning); do the same so the
  // table matches what transformers builds.
  if (static_cast<std::int64_t>(t.layer_types.size()) == t.num_hidden_layers) t.layer_types.back() = kFullAttention;
  build_layer_table(t, f.source() + ": " + f.prefix());  // validates layer_types, donors, RoPE per type
  return t;
}

// ---- vision_config / audio_config ------------------------------------------------------------

VisionConfig parse_vision(const Fields& f) {
  VisionConfig v;
  std::string model_type = "gemma4_vision";
  f.get("model_type", model_type);
  if (model_type != "gemma4_vision")
    unsupported(f.where("model_type") + ": \"" + model_type + "\" is not supported (expected \"gemma4_vision\")");
  f.get("hidden_size", v.hidden_size);
  f.get("intermediate_size", v.intermediate_size);
  f.get("num_hidden_layers", v.num_hidden_layers);
  f.get("num_attention_heads", v.num_attention_heads);
  f.get("num_key_value_heads", v.num_key_value_heads);
  f.get("head_dim", v.head_dim);
  std::optional<std::int64_t> global_head_dim = v.global_head_dim;
  f.get("global_head_dim", global_head_dim);
  v.global_head_dim = global_head_dim.value_or(v.head_dim);
  f.get("hidden_activation", v.hidden_activation);
  f.get("rms_norm_eps", v.rms_norm_eps);
  f.get("patch_size", v.patch_size);
  f.get("pooling_kernel_size", v.pooling_kernel_size);
  f.get("position_embedding_size", v.position_embedding_size);
  if (auto rp = f.object("rope_parameters")) v.rope_parameters = parse_rope(*rp, v.rope_parameters);
  f.get("use_clipped_linears", v.use_clipped_linears);
  f.get("standardize", v.standardize);
  f.get("default_output_length", v.default_output_length);
  f.get("attention_bias", v.attention_bias);
  f.get("max_position_embeddings", v.max_position_embeddings);
  f.get("attention_dropout", v.attention_dropout);
  f.get("initializer_range", v.initializer_range);

  check_activation(f, "hidden_activation", v.hidden_activation);
  check_rope(f, "rope_parameters", v.rope_parameters, false);
  require_positive(f, "hidden_size", v.hidden_size);
  require_positive(f, "intermediate_size", v.intermediate_size);
  require_positive(f, "num_hidden_layers", v.num_hidden_layers, kMaxLayers);
  require_positive(f, "num_attention_heads", v.num_attention_heads);
  require_positive(f, "num_key_value_heads", v.num_key_value_heads);
  require_heads_divisible(f, v.num_attention_heads, v.num_key_value_heads);
  require_positive(f, "head_dim", v.head_dim);
  require_multiple(f, "head_dim", v.head_dim, 4, "4 (2-D RoPE rotates pairs in an x half and a y half)");
  require_positive(f, "patch_size", v.patch_size);
  require_positive(f, "pooling_kernel_size", v.pooling_kernel_size);
  require_positive(f, "position_embedding_size", v.position_embedding_size);
  require_positive(f, "default_output_length", v.default_output_length, kNoLimit);
  if (!(v.rms_norm_eps > 0)) invalid_file(f.where("rms_norm_eps") + ": expected a positive number");
  return v;
}

AudioConfig parse_audio(const Fields& f) {
  AudioConfig a;
  f.get("hidden_size", a.hidden_size);
  f.get("num_hidden_layers", a.num_hidden_layers);
  f.get("num_attention_heads", a.num_attention_heads);
  f.get("hidden_act", a.hidden_act);
  f.get_int_list("subsampling_conv_channels", a.subsampling_conv_channels);
  f.get("conv_kernel_size", a.conv_kernel_size);
  f.get("residual_weight", a.residual_weight);
  f.get("attention_chunk_size", a.attention_chunk_size);
  f.get("attention_context_left", a.attention_context_left);
  f.get("attention_context_right", a.attention_context_right);
  f.get("attention_logit_cap", a.attention_logit_cap);
  f.get("attention_invalid_logits_value", a.attention_invalid_logits_value);
  f.get("use_clipped_linears", a.use_clipped_linears);
  f.get("rms_norm_eps", a.rms_norm_eps);
  f.get("gradient_clipping", a.gradient_clipping);
  f.get("output_proj_dims", a.output_proj_dims);
  f.get("initializer_range", a.initializer_range);
  return a;
}

json parse_json_object(const std::string& text, const std::string& source) {
  check_json_limits(text, source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and numbers out of range
    std::string what = e.what();
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep line/column and the reason.
    if (auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string::npos)
      what = what.substr(pos + 2);
    invalid_file(source + ": not valid JSON: " + what);
  }
  if (!j.is_object()) invalid_file(source + ": expected a JSON object at the top level, got " + describe(j));
  return j;
}

// "dtype" (transformers 5) or "torch_dtype" (older files).
void get_dtype(const Fields& f, std::string& out) {
  f.get("torch_dtype", out);
  f.get("dtype", out);
}

}  // namespace

// ---- public: parse ---------------------------------------------------------------------------

ModelConfig parse_model_config(const std::string& json_text, const std::string& source) {
  const json root = parse_json_object(json_text, source);
  const Fields top(root, source, "");
  ModelConfig c;
  const json* model_type = top.find("model_type");
  if (model_type == nullptr)
    invalid_file(top.where("model_type") + ": missing (expected \"gemma4\" or \"gemma4_text\")");
  top.get("model_type", c.model_type);
  if (c.model_type != "gemma4" && c.model_type != "gemma4_text")
    unsupported(top.where("model_type") + ": \"" + c.model_type +
                "\" is not supported (expected \"gemma4\" or \"gemma4_text\")");
  if (const json* q = top.find("quantization_config"); q != nullptr && !q->is_null()) {
    // Another tool's quantization (GPTQ, AWQ, bitsandbytes, ...) stores tensors this loader does not read.
    const auto method = q->is_object() ? q->find("quant_method") : q->end();
    if (!q->is_object() || method == q->end() || *method != "staticlm") {
      unsupported(top.where("quantization_config.quant_method") + " " +
                  (method == q->end() ? std::string("missing") : method->dump()) +
                  ": staticlm reads only its own quantized checkpoints (\"staticlm\", from `staticlm quantize`)");
    }
    const auto scheme = q->find("scheme");
    if (scheme == q->end() || !scheme->is_string()) {
      invalid_file(top.where("quantization_config.scheme") + " is missing or not a string (expected q8, q4 or npu-w4)");
    }
    if (!quant::known_scheme(scheme->get<std::string>())) {
      invalid_file(top.where("quantization_config.scheme") + ": unknown scheme " + scheme->dump() +
                   " (expected q8, q4 or npu-w4)");
    }
    c.quantization_scheme = scheme->get<std::string>();
  }
  c.architecture = c.multimodal() ? "Gemma4ForConditionalGeneration" : "Gemma4ForCausalLM";
  std::vector<std::string> architectures;
  top.get_string_list("architectures", architectures);
  if (!architectures.empty()) c.architecture = architectures.front();

  if (!c.multimodal()) {
    c.text = parse_text(top);
    c.eos_token_id = c.text.eos_token_id;
    c.tie_word_embeddings = c.text.tie_word_embeddings;
    get_dtype(top, c.dtype);
    return c;
  }

  if (auto tf = top.object("text_config")) {
    c.text = parse_text(*tf);
    get_dtype(*tf, c.dtype);
  } else {
    const json empty = json::object();  // upstream: no text_config means all defaults
    c.text = parse_text(Fields(empty, source, "text_config."));
  }
  if (auto vf = top.object("vision_config")) c.vision = parse_vision(*vf);
  if (auto af = top.object("audio_config")) c.audio = parse_audio(*af);
  get_dtype(top, c.dtype);

  top.get("boi_token_id", c.boi_token_id);
  top.get("eoi_token_id", c.eoi_token_id);
  top.get("image_token_id", c.image_token_id);
  top.get("video_token_id", c.video_token_id);
  top.get("boa_token_id", c.boa_token_id);
  top.get("eoa_token_index", c.eoa_token_id);
  top.get("eoa_token_id", c.eoa_token_id);
  top.get("audio_token_id", c.audio_token_id);
  top.get("vision_soft_tokens_per_image", c.vision_soft_tokens_per_image);
  c.eos_token_id = c.text.eos_token_id;
  top.get_int_list("eos_token_id", c.eos_token_id);
  top.get("tie_word_embeddings", c.tie_word_embeddings);
  if (!c.tie_word_embeddings)
    unsupported(top.where("tie_word_embeddings") +
                ": an untied lm_head is not supported (the runtime's head reads embed_tokens)");
  if (c.vision) require_positive(top, "vision_soft_tokens_per_image", c.vision_soft_tokens_per_image, kNoLimit);
  // A negative special id is no token (transformers checks none of them; an id past the
  // vocabulary is left as it does: configs written with the defaults for a small vocabulary).
  for (const auto& [key, id] : {std::pair<const char*, std::int64_t>{"boi_token_id", c.boi_token_id},
                                {"eoi_token_id", c.eoi_token_id}, {"image_token_id", c.image_token_id.value_or(0)},
                                {"video_token_id", c.video_token_id}, {"boa_token_id", c.boa_token_id},
                                {"eoa_token_id", c.eoa_token_id}, {"audio_token_id", c.audio_token_id}}) {
    if (id < 0) invalid_file(top.where(key) + ": token id " + std::to_string(id) + " is negative (expected a row of embed_tokens)");
  }
  return c;
}

ModelConfig load_model_config(const std::string& checkpoint_dir) {
  const std::string path = path_join(checkpoint_dir, "config.json");
  return parse_model_config(read_file(path), path);
}

GenerationConfig parse_generation_config(const std::string& json_text, const std::string& source) {
  const json root = parse_json_object(json_text, source);
  const Fields f(root, source, "");
  GenerationConfig g;
  f.get_int_list("eos_token_id", g.eos_token_id);
  f.get("pad_token_id", g.pad_token_id);
  f.get("bos_token_id", g.bos_token_id);
  f.get("do_sample", g.do_sample);
  f.get("temperature", g.temperature);
  f.get("top_k", g.top_k);
  f.get("top_p", g.top_p);
  f.get("min_p", g.min_p);
  f.get("typical_p", g.typical_p);
  f.get("repetition_penalty", g.repetition_penalty);
  f.get("max_new_tokens", g.max_new_tokens);
  if (g.temperature && *g.temperature < 0) invalid_file(f.where("temperature") + ": expected a number >= 0");
  if (g.top_k && *g.top_k < 0) invalid_file(f.where("top_k") + ": expected an integer >= 0");
  if (g.top_p && !(*g.top_p >= 0 && *g.top_p <= 1)) invalid_file(f.where("top_p") + ": expected a number in [0, 1]");
  if (g.min_p && !(*g.min_p >= 0 && *g.min_p <= 1)) invalid_file(f.where("min_p") + ": expected a number in [0, 1]");
  // Transformers' TypicalLogitsWarper refuses 0 and applies below 1.
  if (g.typical_p && !(*g.typical_p > 0 && *g.typical_p <= 1)) {
    invalid_file(f.where("typical_p") + ": expected a number in (0, 1]");
  }
  if (g.max_new_tokens && *g.max_new_tokens < 0) invalid_file(f.where("max_new_tokens") + ": expected an integer >= 0");
  return g;
}

std::optional<GenerationConfig> load_generation_config(const std::string& checkpoint_dir) {
  const std::string path = path_join(checkpoint_dir, "generation_config.json");
  if (!file_exists(path)) return std::nullopt;
  return parse_generation_config(read_file(path), path);
}

// ---- public: serialize -----------------------------------------------------------------------

namespace {

template <typename T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// One id as a number, several as a list (what transformers writes).
json id_list(const std::vector<std::int64_t>& ids) { return ids.size() == 1 ? json(ids[0]) : json(ids); }

json rope_to_json(const RopeParameters& r) {
  json j = {{"rope_type", r.rope_type}, {"rope_theta", r.rope_theta}};
  if (r.rope_type == "proportional" || r.partial_rotary_factor != 1.0)
    j["partial_rotary_factor"] = r.partial_rotary_factor;
  if (r.factor != 1.0) j["factor"] = r.factor;
  return j;
}

json text_to_json(const TextConfig& t) {
  json j;
  j["model_type"] = "gemma4_text";
  j["vocab_size"] = t.vocab_size;
  j["hidden_size"] = t.hidden_size;
  j["intermediate_size"] = t.intermediate_size;
  j["num_hidden_layers"] = t.num_hidden_layers;
  j["num_attention_heads"] = t.num_attention_heads;
  j["num_key_value_heads"] = t.num_key_value_heads;
  j["head_dim"] = t.head_dim;
  j["global_head_dim"] = t.global_head_dim;
  j["num_global_key_value_heads"] = or_null(t.num_global_key_value_heads);
  if (!t.per_layer_config.empty()) {
    json plc = json::object();
    for (const auto& [index, o] : t.per_layer_config) {
      json e = json::object();
      if (o.head_dim) e["head_dim"] = *o.head_dim;
      if (o.num_attention_heads) e["num_attention_heads"] = *o.num_attention_heads;
      if (o.num_key_value_heads) e["num_key_value_heads"] = *o.num_key_value_heads;
      plc[std::to_string(index)] = e;
    }
    j["per_layer_config"] = plc;
  }
  j["attention_k_eq_v"] = t.attention_k_eq_v;
  j["hidden_activation"] = t.hidden_activation;
  j["max_position_embeddings"] = t.max_position_embeddings;
  j["rms_norm_eps"] = t.rms_norm_eps;
  j["pad_token_id"] = t.pad_token_id;
  j["eos_token_id"] = id_list(t.eos_token_id);
  j["bos_token_id"] = t.bos_token_id;
  j["tie_word_embeddings"] = t.tie_word_embeddings;
  j["attention_bias"] = t.attention_bias;
  j["sliding_window"] = t.sliding_window;
  j["layer_types"] = t.layer_types;
  json rope = json::object();
  for (const auto& [type, r] : t.rope_parameters) rope[type] = rope_to_json(r);
  j["rope_parameters"] = rope;
  j["final_logit_softcapping"] = or_null(t.final_logit_softcapping);
  j["use_bidirectional_attention"] = or_null(t.use_bidirectional_attention);
  j["vocab_size_per_layer_input"] = t.vocab_size_per_layer_input;
  j["hidden_size_per_layer_input"] = t.hidden_size_per_layer_input;
  j["num_kv_shared_layers"] = t.num_kv_shared_layers;
  j["use_double_wide_mlp"] = t.use_double_wide_mlp;
  j["enable_moe_block"] = t.enable_moe_block;
  j["num_experts"] = or_null(t.num_experts);
  j["top_k_experts"] = or_null(t.top_k_experts);
  j["moe_intermediate_size"] = or_null(t.moe_intermediate_size);
  j["attention_dropout"] = t.attention_dropout;
  j["initializer_range"] = t.initializer_range;
  j["use_cache"] = t.use_cache;
  return j;
}

json vision_to_json(const VisionConfig& v) {
  return {{"model_type", "gemma4_vision"},
          {"hidden_size", v.hidden_size},
          {"intermediate_size", v.intermediate_size},
          {"num_hidden_layers", v.num_hidden_layers},
          {"num_attention_heads", v.num_attention_heads},
          {"num_key_value_heads", v.num_key_value_heads},
          {"head_dim", v.head_dim},
          {"global_head_dim", v.global_head_dim},
          {"hidden_activation", v.hidden_activation},
          {"rms_norm_eps", v.rms_norm_eps},
          {"patch_size", v.patch_size},
          {"pooling_kernel_size", v.pooling_kernel_size},
          {"position_embedding_size", v.position_embedding_size},
          {"rope_parameters", rope_to_json(v.rope_parameters)},
          {"use_clipped_linears", v.use_clipped_linears},
          {"standardize", v.standardize},
          {"default_output_length", v.default_output_length},
          {"attention_bias", v.attention_bias},
          {"max_position_embeddings", v.max_position_embeddings},
          {"attention_dropout", v.attention_dropout},
          {"initializer_range", v.initializer_range}};
}

json audio_to_json(const AudioConfig& a) {
  return {{"model_type", "gemma4_audio"},
          {"hidden_size", a.hidden_size},
          {"num_hidden_layers", a.num_hidden_layers},
          {"num_attention_heads", a.num_attention_heads},
          {"hidden_act", a.hidden_act},
          {"subsampling_conv_channels", a.subsampling_conv_channels},
          {"conv_kernel_size", a.conv_kernel_size},
          {"residual_weight", a.residual_weight},
          {"attention_chunk_size", a.attention_chunk_size},
          {"attention_context_left", a.attention_context_left},
          {"attention_context_right", a.attention_context_right},
          {"attention_logit_cap", a.attention_logit_cap},
          {"attention_invalid_logits_value", a.attention_invalid_logits_value},
          {"use_clipped_linears", a.use_clipped_linears},
          {"rms_norm_eps", a.rms_norm_eps},
          {"gradient_clipping", a.gradient_clipping},
          {"output_proj_dims", a.output_proj_dims},
          {"initializer_range", a.initializer_range}};
}

}  // namespace

std::string model_config_to_json(const ModelConfig& c) {
  json j;
  if (!c.multimodal()) {
    j = text_to_json(c.text);  // eos_token_id is text.eos_token_id here
  } else {
    json text = text_to_json(c.text);
    text["dtype"] = c.dtype;
    j["text_config"] = text;
    j["vision_config"] = c.vision ? vision_to_json(*c.vision) : json(nullptr);
    if (c.vision) j["vision_config"]["dtype"] = c.dtype;
    j["audio_config"] = c.audio ? audio_to_json(*c.audio) : json(nullptr);
    j["boi_token_id"] = c.boi_token_id;
    j["eoi_token_id"] = c.eoi_token_id;
    j["image_token_id"] = or_null(c.image_token_id);
    j["video_token_id"] = c.video_token_id;
    j["boa_token_id"] = c.boa_token_id;
    j["eoa_token_id"] = c.eoa_token_id;
    j["eoa_token_index"] = c.eoa_token_id;
    j["audio_token_id"] = c.audio_token_id;
    j["vision_soft_tokens_per_image"] = c.vision_soft_tokens_per_image;
    j["eos_token_id"] = id_list(c.eos_token_id);
    j["tie_word_embeddings"] = c.tie_word_embeddings;
  }
  j["architectures"] = json::array({c.architecture});
  j["model_type"] = c.model_type;
  j["dtype"] = c.dtype;
  return j.dump(2) + "\n";
}

std::string generation_config_to_json(const GenerationConfig& g) {
  json j;
  j["eos_token_id"] = g.eos_token_id;
  if (g.pad_token_id) j["pad_token_id"] = *g.pad_token_id;
  if (g.bos_token_id) j["bos_token_id"] = *g.bos_token_id;
  j["do_sample"] = g.do_sample;
  if (g.temperature) j["temperature"] = *g.temperature;
  if (g.top_k) j["top_k"] = *g.top_k;
  if (g.top_p) j["top_p"] = *g.top_p;
  if (g.min_p) j["min_p"] = *g.min_p;
  if (g.typical_p) j["typical_p"] = *g.typical_p;
  if (g.repetition_penalty) j["repetition_penalty"] = *g.repetition_penalty;
  if (g.max_new_tokens) j["max_new_tokens"] = *g.max_new_tokens;
  return j.dump(2) + "\n";
}

}  // namespace staticlm
