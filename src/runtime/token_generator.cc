#include "runtime/token_generator.h"

#include <algorithm>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "runtime/masks.h"
#include "runtime/rope.h"
#include "runtime/softcap.h"

namespace staticlm {

namespace {

TensorView f32_view(std::span<const float> v, Shape shape) { return {DType::kF32, std::move(shape), v.data()}; }
TensorBuffer f32_buffer(std::vector<float>& v, Shape shape) { return {DType::kF32, std::move(shape), v.data()}; }

}  // namespace

TokenGenerator::TokenGenerator(const RuntimeState& st) {
  const std::int64_t s = st.max_seq, d = st.config.text.hidden_size;
  const std::int64_t p = st.config.text.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(st.layers.size());
  hidden_.resize(d);
  hidden_next_.resize(d);
  logits_.resize(st.config.text.vocab_size);
  if (p > 0) {
    ple_tokens_.resize(n_layers * p);
    ple_all_.resize(n_layers * p);
  }
  mask_full_.resize(s);
  mask_sliding_.resize(s);
  rope_ = distinct_rope_tables(st.inv_freq, st.layers);
  for (const int first : rope_.first_layer) {
    cos_.emplace_back(st.layers[static_cast<std::size_t>(first)].head_dim);
    sin_.emplace_back(st.layers[static_cast<std::size_t>(first)].head_dim);
  }
  delta_k_.resize(st.layers.size());
  delta_v_.resize(st.layers.size());
  calls_.resize(st.layers.size());
  // Each layer's call, shapes included, made once: a step only points it at this step's
  // buffers (building names, shapes and vectors per layer cost microseconds a layer).
  for (const LayerInfo& l : st.layers) {
    const std::int64_t hd = l.head_dim, kvh = l.num_kv_heads;
    LayerCall& c = calls_[l.index];
    c.name = decoder_layer_decode_name(l.index);
    c.inputs = {f32_view({}, {1, 1, d}), f32_view({}, {1, 1, s}), f32_view({}, {1, 1, hd}), f32_view({}, {1, 1, hd})};
    if (p > 0) c.inputs.push_back(f32_view({}, {1, 1, p}));
    c.outputs = {TensorBuffer{DType::kF32, Shape{1, 1, d}, nullptr}};
    if (l.owns_kv) {
      delta_k_[l.index].resize(kvh * hd);
      delta_v_[l.index].resize(kvh * hd);
      c.inputs.push_back(f32_view({}, {1, kvh, s - 1, hd}));
      c.inputs.push_back(f32_view({}, {1, kvh, s - 1, hd}));
      c.outputs.push_back(f32_buffer(delta_k_[l.index], {1, kvh, 1, hd}));
      c.outputs.push_back(f32_buffer(delta_v_[l.index], {1, kvh, 1, hd}));
    } else {
      c.inputs.push_back(f32_view({}, {1, kvh, s, hd}));
      c.inputs.push_back(f32_view({}, {1, kvh, s, hd}));
    }
  }
}

std::span<const float> TokenGenerator::step(RuntimeState& st, std::int64_t token) {
  Backend& b = st.backend;
  const TextConfig& t = st.config.text;
  const std::int64_t s = st.max_seq, d = t.hidden_size, p = t.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(st.layers.size());
  if (!st.prefilled) invalid_argument("decode: call prefill first");
  const std::int64_t past = st.past_len;
  if (past >= s - 1) {
    out_of_range("decode: the KV cache is full: max_seq " + std::to_string(s) + " holds " + std::to_string(s - 1) +
                 " tokens and all are used");
  }

  const TensorView ids{DType::kI64, Shape{1, 1}, &token};
  {
    const TensorBuffer out = f32_buffer(hidden_, {1, 1, d});
    b.run(kTokenEmbedding, std::span(&ids, 1), std::span(&out, 1));
  }
  if (p > 0) {
    const TensorBuffer tok = f32_buffer(ple_tokens_, {1, 1, n_layers, p});
    b.run(kPleEmbedding, std::span(&ids, 1), std::span(&tok, 1));
    const TensorView pin[2] = {f32_view(hidden_, {1, 1, d}), f32_view(ple_tokens_, {1, 1, n_layers, p})};
    const TensorBuffer pout = f32_buffer(ple_all_, {1, 1, n_layers, p});
    b.run(kPleProjection, pin, std::span(&pout, 1));
  }

  build_decode_mask(mask_full_, s, past, std::nullopt, st.mask_fill);
  build_decode_mask(mask_sliding_, s, past, t.sliding_window, st.mask_fill);
  for (std::size_t t = 0; t < cos_.size(); ++t) {
    build_rope_table(st.inv_freq[static_cast<std::size_t>(rope_.first_layer[t])], past, 1, b.profile().rope_sine,
                     cos_[t], sin_[t]);
  }

  for (const LayerInfo& l : st.layers) {
    LayerCall& c = calls_[l.index];
    std::size_t i = 0;
    c.inputs[i++].data = hidden_.data();
    c.inputs[i++].data = (l.sliding ? mask_sliding_ : mask_full_).data();
    c.inputs[i++].data = cos_[rope_.table_of[l.index]].data();
    c.inputs[i++].data = sin_[rope_.table_of[l.index]].data();
    if (p > 0) c.inputs[i++].data = ple_all_.data() + l.index * p;
    c.inputs[i++].data = (l.owns_kv ? st.cache.k(l.index) : st.cache.mirror_k(l.kv_source)).data();
    c.inputs[i++].data = (l.owns_kv ? st.cache.v(l.index) : st.cache.mirror_v(l.kv_source)).data();
    c.outputs[0].data = hidden_next_.data();
    b.run(c.name, c.inputs, c.outputs);
    if (l.stores_shared_kv) st.cache.set_mirror_current(l.index, delta_k_[l.index], delta_v_[l.index]);
    std::swap(hidden_, hidden_next_);
  }
  // Write-back after the step: consumers saw cat(cache before this step, current row), exactly
  // what the donor published.
  for (const LayerInfo& l : st.layers) {
    if (l.owns_kv) st.cache.write_decode(l.index, delta_k_[l.index], delta_v_[l.index], past);
  }

  const TensorBuffer lout = f32_buffer(logits_, {1, 1, t.vocab_size});
  const TensorView h = f32_view(hidden_, {1, 1, d});
  b.run(kLmHead, std::span(&h, 1), std::span(&lout, 1));
  apply_final_softcap(logits_, t.final_logit_softcapping, st.pool);
  st.past_len = past + 1;
  return logits_;
}

}  // namespace staticlm
