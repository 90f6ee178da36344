#include "runtime/appender.h"

#include <algorithm>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "runtime/masks.h"
#include "runtime/rope.h"
#include "runtime/softcap.h"

namespace staticlm {

namespace {

TensorView view_of(std::span<const float> v, Shape shape) { return {DType::kF32, std::move(shape), v.data()}; }
TensorBuffer buffer_of(std::vector<float>& v, Shape shape) { return {DType::kF32, std::move(shape), v.data()}; }

}  // namespace

Appender::Appender(const RuntimeState& st) {
  const Backend& b = st.backend;
  for (std::int64_t q : b.profile().append_lengths) {
    bool all = true;
    for (const LayerInfo& l : st.layers) all = all && b.has(decoder_layer_append_name(l.index, q));
    if (all) buckets_.push_back(q);
  }
  if (buckets_.empty()) return;
  const std::int64_t qmax = buckets_.back(), s = st.max_seq, d = st.config.text.hidden_size;
  const std::int64_t p = st.config.text.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(st.layers.size());
  ids_.resize(qmax);
  hidden_.resize(qmax * d);
  hidden_next_.resize(qmax * d);
  logits_.resize(st.config.text.vocab_size);
  if (p > 0) {
    ple_tokens_.resize(qmax * n_layers * p);
    ple_all_.resize(qmax * n_layers * p);
    ple_layer_.resize(qmax * p);
  }
  mask_full_.resize(qmax * s);
  mask_sliding_.resize(qmax * s);
  rope_ = distinct_rope_tables(st.inv_freq, st.layers);
  for (const int first : rope_.first_layer) {
    cos_.emplace_back(qmax * st.layers[static_cast<std::size_t>(first)].head_dim);
    sin_.emplace_back(qmax * st.layers[static_cast<std::size_t>(first)].head_dim);
  }
  new_k_.resize(st.layers.size());
  new_v_.resize(st.layers.size());
  shared_k_.resize(st.layers.size());
  shared_v_.resize(st.layers.size());
  std::int64_t staging = 0;
  for (const LayerInfo& l : st.layers) {
    if (!l.owns_kv) continue;
    new_k_[l.index].resize(l.num_kv_heads * qmax * l.head_dim);
    new_v_[l.index].resize(l.num_kv_heads * qmax * l.head_dim);
    if (l.stores_shared_kv) {
      shared_k_[l.index].resize(l.num_kv_heads * s * l.head_dim);
      shared_v_[l.index].resize(l.num_kv_heads * s * l.head_dim);
    }
    if (l.num_kv_heads > 1) staging = std::max(staging, l.num_kv_heads * (s - 1) * l.head_dim);
  }
  past_k_.resize(staging);
  past_v_.resize(staging);
}

std::int64_t Appender::pick_bucket(std::int64_t max_seq, std::int64_t past_len, std::int64_t count) const {
  std::int64_t largest = 0;
  for (std::int64_t q : buckets_) {
    if (q > max_seq - past_len) break;  // the past would not fit the graph's S-Q slots
    if (q >= count) return q;
    largest = q;
  }
  return largest;
}

std::span<const float> Appender::run(RuntimeState& st, std::int64_t q, std::span<const std::int64_t> tokens,
                                     bool want_logits) {
  Backend& b = st.backend;
  const TextConfig& t = st.config.text;
  const std::int64_t s = st.max_seq, d = t.hidden_size, p = t.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(st.layers.size());
  const std::int64_t count = static_cast<std::int64_t>(tokens.size()), past = st.past_len;
  if (std::find(buckets_.begin(), buckets_.end(), q) == buckets_.end()) {
    invalid_argument("append: backend " + b.name() + " has no append graphs for bucket " + std::to_string(q));
  }
  // Masks first: they refuse tokens that do not fit before anything changes.
  build_append_mask(std::span(mask_full_).first(q * s), s, q, past, count, std::nullopt, st.mask_fill);
  build_append_mask(std::span(mask_sliding_).first(q * s), s, q, past, count, t.sliding_window, st.mask_fill);
  for (std::size_t r = 0; r < cos_.size(); ++r) {
    const std::int64_t hd = st.layers[static_cast<std::size_t>(rope_.first_layer[r])].head_dim;
    build_rope_table(st.inv_freq[static_cast<std::size_t>(rope_.first_layer[r])], past, q, b.profile().rope_sine,
                     std::span(cos_[r]).first(q * hd), std::span(sin_[r]).first(q * hd));
  }

  // Embeddings of the real tokens only (dynamic axis); bucket padding rows stay zero.
  std::copy(tokens.begin(), tokens.end(), ids_.begin());
  std::fill(hidden_.begin(), hidden_.begin() + q * d, 0.0f);
  const TensorView ids{DType::kI64, Shape{1, count}, ids_.data()};
  {
    const TensorBuffer out = buffer_of(hidden_, {1, count, d});
    b.run(kTokenEmbedding, std::span(&ids, 1), std::span(&out, 1));
  }
  if (p > 0) {
    std::fill(ple_all_.begin(), ple_all_.begin() + q * n_layers * p, 0.0f);
    const TensorBuffer tok = buffer_of(ple_tokens_, {1, count, n_layers, p});
    b.run(kPleEmbedding, std::span(&ids, 1), std::span(&tok, 1));
    const TensorView pin[2] = {view_of(hidden_, {1, count, d}), view_of(ple_tokens_, {1, count, n_layers, p})};
    const TensorBuffer pout = buffer_of(ple_all_, {1, count, n_layers, p});
    b.run(kPleProjection, pin, std::span(&pout, 1));
  }

  for (const LayerInfo& l : st.layers) {
    stop_point(st);
    const std::int64_t hd = l.head_dim, kvh = l.num_kv_heads;
    std::vector<TensorView> inputs = {view_of(hidden_, {1, q, d}),
                                      view_of(l.sliding ? mask_sliding_ : mask_full_, {1, 1, q, s}),
                                      view_of(cos_[rope_.table_of[l.index]], {1, q, hd}),
                                      view_of(sin_[rope_.table_of[l.index]], {1, q, hd})};
    if (p > 0) {
      for (std::int64_t r = 0; r < q; ++r) {
        std::copy_n(ple_all_.data() + (r * n_layers + l.index) * p, p, ple_layer_.data() + r * p);
      }
      inputs.push_back(view_of(ple_layer_, {1, q, p}));
    }
    std::vector<TensorBuffer> outputs = {buffer_of(hidden_next_, {1, q, d})};
    const std::int64_t past_rows = s - q;
    if (l.owns_kv) {
      if (kvh == 1) {
        // One KV head: the first S-Q slots are a prefix of the cache buffer.
        inputs.push_back(view_of(st.cache.k(l.index).first(past_rows * hd), {1, 1, past_rows, hd}));
        inputs.push_back(view_of(st.cache.v(l.index).first(past_rows * hd), {1, 1, past_rows, hd}));
      } else {
        st.cache.copy_past(l.index, past_rows, past_k_, past_v_);
        inputs.push_back(view_of(std::span(past_k_).first(kvh * past_rows * hd), {1, kvh, past_rows, hd}));
        inputs.push_back(view_of(std::span(past_v_).first(kvh * past_rows * hd), {1, kvh, past_rows, hd}));
      }
      outputs.push_back(buffer_of(new_k_[l.index], {1, kvh, q, hd}));
      outputs.push_back(buffer_of(new_v_[l.index], {1, kvh, q, hd}));
    } else {
      inputs.push_back(view_of(shared_k_[l.kv_source], {1, kvh, s, hd}));
      inputs.push_back(view_of(shared_v_[l.kv_source], {1, kvh, s, hd}));
    }
    b.run(decoder_layer_append_name(l.index, q), inputs, outputs);
    if (l.stores_shared_kv) {
      // What consumers of this type read: cat(past slots [0, S-Q), the Q new rows), per head.
      std::vector<float>& sk = shared_k_[l.index];
      std::vector<float>& sv = shared_v_[l.index];
      st.cache.copy_past(l.index, past_rows, sk, sv);
      for (std::int64_t h = kvh - 1; h >= 0; --h) {
        // Spread head h's past to its [h, S, hd] place (back to front: heads only move up).
        std::copy_backward(sk.begin() + h * past_rows * hd, sk.begin() + (h + 1) * past_rows * hd,
                           sk.begin() + (h * s + past_rows) * hd);
        std::copy_backward(sv.begin() + h * past_rows * hd, sv.begin() + (h + 1) * past_rows * hd,
                           sv.begin() + (h * s + past_rows) * hd);
        std::copy_n(new_k_[l.index].data() + h * q * hd, q * hd, sk.data() + (h * s + past_rows) * hd);
        std::copy_n(new_v_[l.index].data() + h * q * hd, q * hd, sv.data() + (h * s + past_rows) * hd);
      }
    }
    if (l.owns_kv) {
      const auto n = static_cast<std::size_t>(kvh * q * hd);
      st.cache.write_append(l.index, std::span(new_k_[l.index]).first(n), std::span(new_v_[l.index]).first(n), q, past,
                            count);
    }
    std::swap(hidden_, hidden_next_);
  }
  st.past_len = past + count;
  st.prefilled = true;
  if (!want_logits) return {};
  const TensorView last{DType::kF32, Shape{1, 1, d}, hidden_.data() + (count - 1) * d};
  const TensorBuffer lout = buffer_of(logits_, {1, 1, t.vocab_size});
  b.run(kLmHead, std::span(&last, 1), std::span(&lout, 1));
  apply_final_softcap(logits_, t.final_logit_softcapping, st.pool);
  return logits_;
}

}  // namespace staticlm
