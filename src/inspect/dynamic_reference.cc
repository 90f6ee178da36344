#include "inspect/dynamic_reference.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/dot.h"
#include "backends/cpu/kernels/matmul.h"
#include "backends/cpu/kernels/rmsnorm.h"
#include "backends/cpu/vision_tower.h"
#include "base/error.h"

namespace staticlm::inspect {

namespace {

using std::size_t;

size_t sz(std::int64_t n) { return static_cast<size_t>(n); }

// HF's apply_rotary_pos_emb on one head vector v [hd] with its token's cos, sin [hd]:
// v * cos + rotate_half(v) * sin, rotate_half(v) = concat(-v[hd/2:], v[:hd/2]).
void rotate_head(float* v, const float* cos, const float* sin, std::int64_t hd, std::vector<float>& rotated) {
  const std::int64_t half = hd / 2;
  rotated.resize(sz(hd));
  for (std::int64_t j = 0; j < half; ++j) rotated[sz(j)] = -v[j + half];
  for (std::int64_t j = half; j < hd; ++j) rotated[sz(j)] = v[j - half];
  for (std::int64_t j = 0; j < hd; ++j) v[j] = v[j] * cos[j] + rotated[sz(j)] * sin[j];
}

// x [rows, heads, hd]: head vector e belongs to token e / heads.
void apply_rotary(float* x, std::int64_t rows, std::int64_t heads, std::int64_t hd, const std::vector<float>& cos,
                  const std::vector<float>& sin) {
  std::vector<float> rotated;
  for (std::int64_t e = 0; e < rows * heads; ++e) {
    const std::int64_t token = e / heads;
    rotate_head(x + e * hd, cos.data() + token * hd, sin.data() + token * hd, hd, rotated);
  }
}

void add_into(std::vector<float>& x, const std::vector<float>& y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) x[sz(i)] += y[sz(i)];
}

}  // namespace

DynamicReference::DynamicReference(const Checkpoint& checkpoint, const DynamicOptions& options)
    : checkpoint_(checkpoint), options_(options) {}

std::unique_ptr<DynamicReference> DynamicReference::create(const Checkpoint& checkpoint,
                                                           const DynamicOptions& options) {
  const ModelConfig& c = checkpoint.config();
  for (const LayerInfo& l : checkpoint.layers()) {
    const RopeParameters& r = c.text.rope_parameters.at(l.type);
    if (r.rope_type == "default" && r.partial_rotary_factor != 1.0) {
      unsupported("dynamic reference: rope_parameters." + l.type + ": a default RoPE with partial_rotary_factor " +
                  std::to_string(r.partial_rotary_factor) + " (only 1 is handled)");
    }
  }
  std::unique_ptr<DynamicReference> d(new DynamicReference(checkpoint, options));
  const TensorStore& store = checkpoint.weights();
  const cpu::WeightGetter get = [&store](const std::string& name) { return store.get(name); };
  d->text_ = cpu::load_text_weights(c, checkpoint.layers(), get);
  cpu::set_bf16_activations(d->text_, options.bf16_activations);
  if (c.vision) {
    d->vision_ = std::make_unique<cpu::CpuVisionWeights>(cpu::load_vision_weights(c, get));
    cpu::set_bf16_activations(*d->vision_, options.bf16_activations);
  }
  const std::size_t n_layers = checkpoint.layers().size();
  d->cache_k_.resize(n_layers);
  d->cache_v_.resize(n_layers);
  return d;
}

void DynamicReference::rope_rows(int layer, std::int64_t start, std::int64_t n, std::vector<float>& cos,
                                 std::vector<float>& sin) const {
  const LayerInfo& l = checkpoint_.layers().at(sz(layer));
  const RopeParameters& r = checkpoint_.config().text.rope_parameters.at(l.type);
  const std::int64_t hd = l.head_dim;
  // "default": every pair rotates, inv_freq[i] = theta^(-2i/hd). "proportional": only the first
  // int(p * hd // 2) pairs rotate, still with exponents over the full hd; the rest get frequency 0.
  const std::int64_t angles = r.rope_type == "proportional"
                                  ? static_cast<std::int64_t>(std::floor(r.partial_rotary_factor * double(hd) / 2.0))
                                  : hd / 2;
  std::vector<double> inv_freq(sz(hd / 2), 0.0);
  for (std::int64_t i = 0; i < angles; ++i) {
    inv_freq[sz(i)] = 1.0 / std::pow(r.rope_theta, double(2 * i) / double(hd));
  }
  cos.assign(sz(n * hd), 0.0f);
  sin.assign(sz(n * hd), 0.0f);
  for (std::int64_t t = 0; t < n; ++t) {
    const double pos = double(start + t);
    for (std::int64_t i = 0; i < hd / 2; ++i) {
      const double a = pos * inv_freq[sz(i)];
      const float c = static_cast<float>(std::cos(a)), s = static_cast<float>(std::sin(a));
      // emb = concat(freqs, freqs)
      cos[sz(t * hd + i)] = cos[sz(t * hd + i + hd / 2)] = c;
      sin[sz(t * hd + i)] = sin[sz(t * hd + i + hd / 2)] = s;
    }
  }
}

void DynamicReference::rope_tables(int layer, std::int64_t n, std::vector<float>& cos, std::vector<float>& sin) const {
  rope_rows(layer, 0, n, cos, sin);
}

bool DynamicReference::attends(int layer, std::int64_t q, std::int64_t k) const {
  const LayerInfo& l = checkpoint_.layers().at(sz(layer));
  if (k < 0 || k > q) return false;
  // Sliding: the window holds sliding_window keys including the query's own, [q - W + 1, q].
  return !l.sliding || q - k < checkpoint_.config().text.sliding_window;
}

void DynamicReference::check_id(std::int64_t id, const std::string& where) const {
  const std::int64_t v = checkpoint_.config().text.vocab_size;
  if (id < 0 || id >= v) {
    invalid_argument("dynamic reference: " + where + " = " + std::to_string(id) + " is outside the vocabulary [0, " +
                     std::to_string(v) + ")");
  }
}

std::vector<std::int64_t> DynamicReference::lookup_ids(std::span<const std::int64_t> ids) const {
  const ModelConfig& c = checkpoint_.config();
  std::vector<std::int64_t> out(ids.begin(), ids.end());
  // Gemma4Model (multimodal only) looks image / video / audio placeholders up as the pad id, for
  // the main embedding and for the PLE alike; Gemma4ForCausalLM embeds ids as given.
  if (!c.multimodal()) return out;
  for (std::int64_t& id : out) {
    if ((c.image_token_id && id == *c.image_token_id) || id == c.video_token_id || id == c.audio_token_id) {
      id = c.text.pad_token_id;
    }
  }
  return out;
}

std::vector<float> DynamicReference::combine_per_layer_inputs(std::span<const std::int64_t> lookup,
                                                              const std::vector<float>& embeds, std::int64_t n) const {
  const TextConfig& t = checkpoint_.config().text;
  const std::int64_t p = t.hidden_size_per_layer_input, d = t.hidden_size;
  const std::int64_t width = static_cast<std::int64_t>(checkpoint_.layers().size()) * p;
  if (p == 0) return {};
  // Token identity: embed_tokens_per_layer(ids) * sqrt(P). Ids past the PLE vocabulary read row 0
  // (Gemma 3n's get_per_layer_inputs; E2B's two vocabularies are the same size).
  std::vector<float> tok(sz(n * width));
  const float tok_scale = static_cast<float>(std::sqrt(double(p)));
  for (std::int64_t r = 0; r < n; ++r) {
    const std::int64_t id = lookup[sz(r)] < t.vocab_size_per_layer_input ? lookup[sz(r)] : 0;
    float* row = tok.data() + r * width;
    cpu::weight_row_f32(text_.embed_tokens_per_layer, id, row);
    for (std::int64_t j = 0; j < width; ++j) row[j] *= tok_scale;
  }
  // Context: per_layer_model_projection(inputs_embeds) * D^-0.5, RMSNorm per [P] slot.
  std::vector<float> ctx(sz(n * width));
  cpu::matmul(embeds.data(), n, text_.per_layer_model_projection, ctx.data(), options_.pool);
  const float proj_scale = static_cast<float>(std::pow(double(d), -0.5));
  for (float& v : ctx) v *= proj_scale;
  cpu::rms_norm(ctx.data(), n * (width / p), p, text_.per_layer_projection_norm.data(),
                static_cast<float>(t.rms_norm_eps), ctx.data());
  const float sum_scale = static_cast<float>(std::pow(2.0, -0.5));
  for (std::int64_t i = 0; i < n * width; ++i) ctx[sz(i)] = (ctx[sz(i)] + tok[sz(i)]) * sum_scale;
  return ctx;
}

std::vector<float> DynamicReference::encode_image(std::span<const float> pixels,
                                                  std::span<const std::int64_t> positions) {
  const ModelConfig& c = checkpoint_.config();
  if (!vision_) {
    invalid_argument("dynamic reference: " + std::to_string(pixels.size()) +
                     " pixel values given, but the checkpoint has no vision tower");
  }
  const std::int64_t pv = 3 * c.vision->patch_size * c.vision->patch_size;
  const std::int64_t total = static_cast<std::int64_t>(pixels.size());
  if (total % pv != 0) {
    invalid_argument("dynamic reference: pixel_values has " + std::to_string(total) +
                     " floats, not a multiple of 3 * patch_size^2 = " + std::to_string(pv));
  }
  const std::int64_t patches = total / pv;
  if (static_cast<std::int64_t>(positions.size()) != 2 * patches) {
    invalid_argument("dynamic reference: image_position_ids has " + std::to_string(positions.size()) +
                     " values, expected 2 * " + std::to_string(patches) + " patches = " +
                     std::to_string(2 * patches));
  }
  // The valid patches alone (spec 4.2: running the encoder on the real patches is identical).
  std::vector<float> px;
  std::vector<std::int64_t> pos;
  for (std::int64_t r = 0; r < patches; ++r) {
    if (positions[sz(2 * r)] == -1 && positions[sz(2 * r + 1)] == -1) continue;
    px.insert(px.end(), pixels.begin() + r * pv, pixels.begin() + (r + 1) * pv);
    pos.push_back(positions[sz(2 * r)]);
    pos.push_back(positions[sz(2 * r + 1)]);
  }
  const std::int64_t valid = static_cast<std::int64_t>(pos.size() / 2);
  if (valid == 0) invalid_argument("dynamic reference: all " + std::to_string(patches) + " image patches are padding");
  const std::int64_t d = c.text.hidden_size;
  std::vector<float> out(sz(valid * d));  // pooling never makes more cells than patches
  cpu::VisionScratch scratch;
  vision_layers_.clear();
  const cpu::VisionLayerTap tap = [this](int, const float* x, std::int64_t n, std::int64_t dv) {
    vision_layers_.emplace_back(x, x + n * dv);
  };
  const std::int64_t tokens = cpu::run_vision_tower(*vision_, *c.vision, px.data(), pos.data(), valid, out.data(),
                                                    valid, scratch, options_.pool, &tap);
  out.resize(sz(tokens * d));
  return out;
}

DynamicStep DynamicReference::prefill(const DynamicPrompt& prompt) {
  const ModelConfig& c = checkpoint_.config();
  const std::int64_t d = c.text.hidden_size;
  const std::int64_t n = static_cast<std::int64_t>(prompt.input_ids.size());
  if (n == 0) invalid_argument("dynamic reference: input_ids is empty");
  for (std::int64_t i = 0; i < n; ++i) check_id(prompt.input_ids[sz(i)], "input_ids[" + std::to_string(i) + "]");
  if (n > c.text.max_position_embeddings) {
    out_of_range("dynamic reference: " + std::to_string(n) + " tokens exceed max_position_embeddings " +
                 std::to_string(c.text.max_position_embeddings));
  }
  if (prompt.pixel_values.empty() && !prompt.image_position_ids.empty()) {
    invalid_argument("dynamic reference: " + std::to_string(prompt.image_position_ids.size()) +
                     " image_position_ids given without pixel values");
  }

  // Encode first: nothing changes when the image is refused.
  std::vector<float> image;
  if (!prompt.pixel_values.empty()) {
    image = encode_image(prompt.pixel_values, prompt.image_position_ids);
  } else {
    vision_layers_.clear();
  }
  const std::int64_t features = static_cast<std::int64_t>(image.size()) / d;
  // Gemma4Model's placeholder check: the placeholder count must equal the feature count (a
  // text-only Gemma4ForCausalLM has no placeholders: its ids are ordinary tokens).
  if (features > 0 && !(c.multimodal() && c.image_token_id)) {
    invalid_argument("dynamic reference: pixel values given, but config.json has no image_token_id");
  }
  if (c.multimodal() && c.image_token_id) {
    const std::int64_t placeholders = std::count(prompt.input_ids.begin(), prompt.input_ids.end(), *c.image_token_id);
    if (placeholders != features) {
      invalid_argument("dynamic reference: " + std::to_string(placeholders) + " image placeholder ids (" +
                       std::to_string(*c.image_token_id) + ") but " + std::to_string(features) + " image features");
    }
  }

  const std::vector<std::int64_t> lookup = lookup_ids(prompt.input_ids);
  // Gemma4TextScaledWordEmbedding: embed(ids) * sqrt(D). Computed in f32, as HF in float32 does
  // (a bf16 model rounds the scale to bf16 first; this reference keeps activations f32).
  std::vector<float> h0(sz(n * d));
  const float scale = static_cast<float>(std::sqrt(double(d)));
  for (std::int64_t r = 0; r < n; ++r) {
    float* row = h0.data() + r * d;
    cpu::weight_row_f32(text_.embed_tokens, lookup[sz(r)], row);
    for (std::int64_t j = 0; j < d; ++j) row[j] *= scale;
  }
  // masked_scatter: the soft tokens, in order, at the placeholder positions (not scaled).
  std::vector<float> embeds = h0;
  if (features > 0) {
    std::int64_t next = 0;
    for (std::int64_t r = 0; r < n; ++r) {
      if (prompt.input_ids[sz(r)] != *c.image_token_id) continue;
      std::copy_n(image.data() + next * d, d, embeds.data() + r * d);
      ++next;
    }
  }
  std::vector<float> ple = combine_per_layer_inputs(lookup, embeds, n);

  for (auto& k : cache_k_) k.clear();
  for (auto& v : cache_v_) v.clear();
  past_len_ = 0;
  token_embeddings_ = std::move(h0);
  image_features_ = std::move(image);
  inputs_embeds_ = embeds;
  per_layer_inputs_ = ple;
  return forward(std::move(embeds), ple, n);
}

DynamicStep DynamicReference::decode(std::int64_t token) {
  const ModelConfig& c = checkpoint_.config();
  if (past_len_ == 0) invalid_argument("dynamic reference: decode before prefill");
  check_id(token, "decode token");
  if (past_len_ + 1 > c.text.max_position_embeddings) {
    out_of_range("dynamic reference: position " + std::to_string(past_len_) + " exceeds max_position_embeddings " +
                 std::to_string(c.text.max_position_embeddings));
  }
  const std::int64_t d = c.text.hidden_size;
  const std::vector<std::int64_t> lookup = lookup_ids(std::span(&token, 1));
  std::vector<float> x(sz(d));
  cpu::weight_row_f32(text_.embed_tokens, lookup[0], x.data());
  const float scale = static_cast<float>(std::sqrt(double(d)));
  for (float& v : x) v *= scale;
  const std::vector<float> ple = combine_per_layer_inputs(lookup, x, 1);
  return forward(std::move(x), ple, 1);
}

DynamicStep DynamicReference::forward(std::vector<float> x, const std::vector<float>& ple, std::int64_t n) {
  const TextConfig& t = checkpoint_.config().text;
  const std::int64_t d = t.hidden_size, p = t.hidden_size_per_layer_input;
  const int n_layers = static_cast<int>(checkpoint_.layers().size());
  DynamicStep step;
  std::vector<float> pli;  // this layer's [n, P] slice of the [n, L*P] per-layer inputs
  for (int i = 0; i < n_layers; ++i) {
    if (p > 0) {
      pli.resize(sz(n * p));
      for (std::int64_t r = 0; r < n; ++r) {
        std::copy_n(ple.data() + r * n_layers * p + i * p, p, pli.data() + r * p);
      }
    }
    decoder_layer(i, n, p > 0 ? pli.data() : nullptr, x);
    step.hidden.push_back(x);
  }
  past_len_ += n;

  // Head on the last row: final norm, tied lm_head (unscaled embed_tokens), soft-capping.
  std::vector<float> h(sz(d));
  cpu::rms_norm(x.data() + (n - 1) * d, 1, d, text_.final_norm.data(), static_cast<float>(t.rms_norm_eps), h.data());
  step.logits.resize(sz(t.vocab_size));
  cpu::matmul(h.data(), 1, text_.embed_tokens, step.logits.data(), options_.pool);
  if (t.final_logit_softcapping) {
    const float cap = static_cast<float>(*t.final_logit_softcapping);
    for (float& v : step.logits) v = std::tanh(v / cap) * cap;
  }
  return step;
}

void DynamicReference::decoder_layer(int i, std::int64_t n, const float* pli, std::vector<float>& x) {
  const LayerInfo& l = checkpoint_.layers()[sz(i)];
  const cpu::CpuLayerWeights& w = text_.layers[sz(i)];
  const TextConfig& t = checkpoint_.config().text;
  const std::int64_t d = t.hidden_size, p = t.hidden_size_per_layer_input;
  const std::int64_t heads = l.num_heads, kv_heads = l.num_kv_heads, hd = l.head_dim;
  const float eps = static_cast<float>(t.rms_norm_eps);
  ThreadPool* pool = options_.pool;

  std::vector<float> cos, sin;
  rope_rows(i, past_len_, n, cos, sin);

  // Attention (spec 2.4).
  std::vector<float> a(sz(n * d));
  cpu::rms_norm(x.data(), n, d, w.input_norm.data(), eps, a.data());
  std::vector<float> q(sz(n * heads * hd));
  cpu::matmul(a.data(), n, w.q_proj, q.data(), pool);
  cpu::rms_norm(q.data(), n * heads, hd, w.q_norm.data(), eps, q.data());
  apply_rotary(q.data(), n, heads, hd, cos, sin);
  if (l.owns_kv) {
    std::vector<float> k(sz(n * kv_heads * hd)), v(sz(n * kv_heads * hd));
    cpu::matmul(a.data(), n, w.k_proj, k.data(), pool);
    cpu::matmul(a.data(), n, w.v_proj, v.data(), pool);
    cpu::rms_norm(k.data(), n * kv_heads, hd, w.k_norm.data(), eps, k.data());
    apply_rotary(k.data(), n, kv_heads, hd, cos, sin);
    cpu::rms_norm(v.data(), n * kv_heads, hd, nullptr, eps, v.data());  // v_norm has no weight
    cache_k_[sz(i)].insert(cache_k_[sz(i)].end(), k.begin(), k.end());
    cache_v_[sz(i)].insert(cache_v_[sz(i)].end(), v.begin(), v.end());
  }
  // A KV-shared layer reads what its donor (an earlier layer) holds after this step's rows.
  const std::vector<float>& keys = cache_k_[sz(l.kv_source)];
  const std::vector<float>& values = cache_v_[sz(l.kv_source)];
  const std::int64_t kv_width = kv_heads * hd, total = past_len_ + n;
  if (static_cast<std::int64_t>(keys.size()) != total * kv_width) {
    internal_error("dynamic reference: layer " + std::to_string(i) + " reads " +
                   std::to_string(keys.size() / sz(kv_width)) + " cached rows from layer " +
                   std::to_string(l.kv_source) + ", expected " + std::to_string(total));
  }
  std::vector<float> attn(sz(n * heads * hd), 0.0f);
  const std::int64_t group = heads / kv_heads;
  // scores = q k^T (scale 1.0, no softcap), masked by attends(), softmax in f32, then @ v.
  parallel_for(pool, n * heads, 1, double(total * hd * 2), [&](std::int64_t begin, std::int64_t end, int) {
    std::vector<float> scores(sz(total));
    std::vector<char> allowed(sz(total));
    for (std::int64_t item = begin; item < end; ++item) {
      const std::int64_t r = item / heads, h = item % heads, kvh = h / group, qpos = past_len_ + r;
      const float* qv = q.data() + (r * heads + h) * hd;
      float max_score = -INFINITY;
      for (std::int64_t k = 0; k < total; ++k) {
        allowed[sz(k)] = attends(i, qpos, k);
        if (!allowed[sz(k)]) continue;
        scores[sz(k)] = cpu::dot(qv, keys.data() + k * kv_width + kvh * hd, hd);
        max_score = std::max(max_score, scores[sz(k)]);
      }
      float sum = 0;
      for (std::int64_t k = 0; k < total; ++k) {
        if (!allowed[sz(k)]) continue;
        scores[sz(k)] = std::exp(scores[sz(k)] - max_score);
        sum += scores[sz(k)];
      }
      float* out = attn.data() + (r * heads + h) * hd;
      for (std::int64_t k = 0; k < total; ++k) {
        if (!allowed[sz(k)]) continue;
        const float weight = scores[sz(k)] / sum;
        const float* vv = values.data() + k * kv_width + kvh * hd;
        for (std::int64_t j = 0; j < hd; ++j) out[j] += weight * vv[j];
      }
    }
  });
  std::vector<float> o(sz(n * d));
  cpu::matmul(attn.data(), n, w.o_proj, o.data(), pool);
  cpu::rms_norm(o.data(), n, d, w.post_attention_norm.data(), eps, o.data());
  add_into(x, o, n * d);

  // MLP: down(gelu_tanh(gate(m)) * up(m)).
  cpu::rms_norm(x.data(), n, d, w.pre_feedforward_norm.data(), eps, a.data());
  const std::int64_t f = l.intermediate_size;
  std::vector<float> gate(sz(n * f)), up(sz(n * f));
  cpu::matmul(a.data(), n, w.gate_proj, gate.data(), pool);
  cpu::matmul(a.data(), n, w.up_proj, up.data(), pool);
  cpu::gelu_tanh_mul(gate.data(), up.data(), n * f);
  cpu::matmul(gate.data(), n, w.down_proj, o.data(), pool);
  cpu::rms_norm(o.data(), n, d, w.post_feedforward_norm.data(), eps, o.data());
  add_into(x, o, n * d);

  // PLE injection: per_layer_projection(gelu_tanh(per_layer_input_gate(x)) * pli), normed, added.
  if (p > 0) {
    std::vector<float> g(sz(n * p));
    cpu::matmul(x.data(), n, w.ple_gate, g.data(), pool);
    cpu::gelu_tanh_mul(g.data(), pli, n * p);
    cpu::matmul(g.data(), n, w.ple_projection, o.data(), pool);
    cpu::rms_norm(o.data(), n, d, w.post_ple_norm.data(), eps, o.data());
    add_into(x, o, n * d);
  }
  // layer_scalar scales the whole stream.
  for (std::int64_t j = 0; j < n * d; ++j) x[sz(j)] *= w.layer_scalar;
}

}  // namespace staticlm::inspect
