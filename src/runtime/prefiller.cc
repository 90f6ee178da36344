#include "runtime/prefiller.h"

#include <algorithm>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "base/memory_size.h"
#include "runtime/masks.h"
#include "runtime/rope.h"
#include "runtime/softcap.h"

namespace staticlm {

namespace {

TensorView f32_view(const std::vector<float>& v, Shape shape) { return {DType::kF32, std::move(shape), v.data()}; }
TensorBuffer f32_buffer(std::vector<float>& v, Shape shape) { return {DType::kF32, std::move(shape), v.data()}; }

// Rows a dynamic-S subgraph is run on: only the valid ones when the graph allows it (rows past
// valid_length feed nothing but masked keys), else the fixed S.
std::int64_t rows_for(const Backend& b, const char* name, std::int64_t s, std::int64_t valid) {
  return b.signature(name).inputs[0].dynamic_axis >= 0 ? valid : s;
}

}  // namespace

double prefill_mask_bytes(const std::vector<LayerInfo>& layers, std::int64_t max_seq) {
  bool any_full = false, any_sliding = false;
  for (const LayerInfo& l : layers) (l.sliding ? any_sliding : any_full) = true;
  return ((any_full ? 1.0 : 0.0) + (any_sliding ? 1.0 : 0.0)) * static_cast<double>(max_seq) * static_cast<double>(max_seq) *
         sizeof(float);
}

Prefiller::Prefiller(const RuntimeState& st) {
  const std::int64_t s = st.max_seq, d = st.config.text.hidden_size;
  const std::int64_t p = st.config.text.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(st.layers.size());
  bool any_full = false, any_sliding = false;
  for (const LayerInfo& l : st.layers) (l.sliding ? any_sliding : any_full) = true;
  // The masks grow as max_seq squared: ones that cannot fit are refused here, before the kernel
  // kills the process for touching them (--max-seq 65536 asks for 32 GiB).
  check_fits_memory(prefill_mask_bytes(st.layers, s), "max_seq " + std::to_string(s) + ": a prefill's " +
                                                          std::to_string(int{any_full} + int{any_sliding}) +
                                                          " attention masks ([1, 1, max_seq, max_seq] f32 each)");
  hidden_.resize(s * d);
  hidden_next_.resize(s * d);
  logits_.resize(st.config.text.vocab_size);
  if (p > 0) {
    ple_tokens_.resize(s * n_layers * p);
    ple_all_.resize(s * n_layers * p);
    ple_layer_.resize(s * p);
  }
  if (any_full) mask_full_.resize(s * s);
  if (any_sliding) mask_sliding_.resize(s * s);
  rope_ = distinct_rope_tables(st.inv_freq, st.layers);
  for (const int first : rope_.first_layer) {
    cos_.emplace_back(s * st.layers[static_cast<std::size_t>(first)].head_dim);
    sin_.emplace_back(s * st.layers[static_cast<std::size_t>(first)].head_dim);
  }
  kv_slot_.assign(st.layers.size(), 0);
  new_k_.resize(1);
  new_v_.resize(1);
  for (const LayerInfo& l : st.layers) {
    if (!l.owns_kv) continue;
    const std::size_t n = static_cast<std::size_t>(l.num_kv_heads * s * l.head_dim);
    std::size_t slot = 0;
    if (l.stores_shared_kv) {
      slot = new_k_.size();
      new_k_.emplace_back();
      new_v_.emplace_back();
    }
    kv_slot_[l.index] = slot;
    new_k_[slot].resize(std::max(new_k_[slot].size(), n));
    new_v_[slot].resize(std::max(new_v_[slot].size(), n));
  }
  for (const LayerInfo& l : st.layers) {
    if (!l.owns_kv) kv_slot_[l.index] = kv_slot_[l.kv_source];
  }
}

PrefillInput prefill_input(const StaticInputs& in) {
  PrefillInput pi;
  pi.llm_input_ids = in.llm_input_ids.as<std::int64_t>();
  pi.valid_length = in.length();
  if (in.pixel_values) pi.pixel_values = in.pixel_values->as<float>();
  return pi;
}

std::span<const float> Prefiller::run(RuntimeState& st, const PrefillInput& in) {
  Backend& b = st.backend;
  const TextConfig& t = st.config.text;
  const std::int64_t s = st.max_seq, d = t.hidden_size, p = t.hidden_size_per_layer_input;
  const std::int64_t n_layers = static_cast<std::int64_t>(st.layers.size());
  const std::int64_t valid = in.valid_length;
  if (static_cast<std::int64_t>(in.llm_input_ids.size()) != s) {
    invalid_argument("prefill: llm_input_ids has " + std::to_string(in.llm_input_ids.size()) +
                     " tokens, expected max_seq = " + std::to_string(s));
  }
  if (valid < 1 || valid > s - 1) {
    out_of_range("prefill: valid_length " + std::to_string(valid) + " must be within [1, " + std::to_string(s - 1) +
                 "]: max_seq " + std::to_string(s) + " must reserve one decode slot");
  }
  st.prefilled = false;
  st.past_len = 0;
  st.cache.reset();

  // Embeddings: [1, S, D], rows past the ones computed stay zero.
  const std::int64_t rows = rows_for(b, kTokenEmbedding, s, valid);
  std::fill(hidden_.begin(), hidden_.end(), 0.0f);
  const TensorView ids{DType::kI64, Shape{1, rows}, in.llm_input_ids.data()};
  {
    const TensorBuffer out = f32_buffer(hidden_, {1, rows, d});
    b.run(kTokenEmbedding, std::span(&ids, 1), std::span(&out, 1));
  }
  if (!in.pixel_values.empty()) {
    if (!b.has(kVisionPrefill) || !b.has(kMultimodalFusion)) {
      unsupported("prefill: an image was given, but backend " + b.name() +
                  " has no vision_prefill / multimodal_fusion_prefill subgraphs for this model and profile");
    }
    const SubgraphSignature& vs = b.signature(kVisionPrefill);
    const TensorView pv{DType::kF32, vs.inputs[0].shape, in.pixel_values.data()};
    if (static_cast<std::int64_t>(in.pixel_values.size()) != vs.inputs[0].shape.numel()) {
      invalid_argument("prefill: pixel_values has " + std::to_string(in.pixel_values.size()) + " floats, expected " +
                       vs.inputs[0].shape.to_string());
    }
    visual_.resize(static_cast<std::size_t>(vs.outputs[0].shape.numel()));
    const TensorBuffer vout = f32_buffer(visual_, vs.outputs[0].shape);
    b.run(kVisionPrefill, std::span(&pv, 1), std::span(&vout, 1));
    const TensorView fin[2] = {f32_view(hidden_, {1, s, d}), f32_view(visual_, vs.outputs[0].shape)};
    const TensorBuffer fout = f32_buffer(hidden_next_, {1, s, d});
    b.run(kMultimodalFusion, fin, std::span(&fout, 1));
    std::swap(hidden_, hidden_next_);
  }

  // Per-layer inputs [1, S, L, P], computed from the fused embeddings.
  if (p > 0) {
    const std::int64_t prow = rows_for(b, kPleEmbedding, s, valid);
    std::fill(ple_all_.begin(), ple_all_.end(), 0.0f);
    const TensorView pid{DType::kI64, Shape{1, prow}, in.llm_input_ids.data()};
    const TensorBuffer tok = f32_buffer(ple_tokens_, {1, prow, n_layers, p});
    b.run(kPleEmbedding, std::span(&pid, 1), std::span(&tok, 1));
    const TensorView pin[2] = {f32_view(hidden_, {1, prow, d}), f32_view(ple_tokens_, {1, prow, n_layers, p})};
    const TensorBuffer pout = f32_buffer(ple_all_, {1, prow, n_layers, p});
    b.run(kPleProjection, pin, std::span(&pout, 1));
  }

  // Host tables: one mask per attention type, RoPE per layer from position 0.
  if (!mask_full_.empty()) build_prefill_mask(mask_full_, s, valid, std::nullopt, st.mask_fill);
  if (!mask_sliding_.empty()) build_prefill_mask(mask_sliding_, s, valid, t.sliding_window, st.mask_fill);
  for (std::size_t t = 0; t < cos_.size(); ++t) {
    build_rope_table(st.inv_freq[static_cast<std::size_t>(rope_.first_layer[t])], 0, s, b.profile().rope_sine, cos_[t],
                     sin_[t]);
  }

  for (const LayerInfo& l : st.layers) {
    stop_point(st);
    const std::int64_t hd = l.head_dim;
    std::vector<TensorView> inputs = {f32_view(hidden_, {1, s, d}),
                                      f32_view(l.sliding ? mask_sliding_ : mask_full_, {1, 1, s, s}),
                                      f32_view(cos_[rope_.table_of[l.index]], {1, s, hd}),
                                      f32_view(sin_[rope_.table_of[l.index]], {1, s, hd})};
    if (p > 0) {
      // Layer i's slice of [S, L, P], made contiguous: [1, S, P].
      for (std::int64_t r = 0; r < s; ++r) {
        std::copy_n(ple_all_.data() + (r * n_layers + l.index) * p, p, ple_layer_.data() + r * p);
      }
      inputs.push_back(f32_view(ple_layer_, {1, s, p}));
    }
    std::vector<TensorBuffer> outputs = {f32_buffer(hidden_next_, {1, s, d})};
    std::vector<float>& nk = new_k_[kv_slot_[l.index]];
    std::vector<float>& nv = new_v_[kv_slot_[l.index]];
    const std::size_t kv_n = static_cast<std::size_t>(l.num_kv_heads * s * hd);
    if (l.owns_kv) {
      outputs.push_back(f32_buffer(nk, {1, l.num_kv_heads, s, hd}));
      outputs.push_back(f32_buffer(nv, {1, l.num_kv_heads, s, hd}));
    } else {
      // NEWER: consumers get the donor's full S rows; padding is masked.
      inputs.push_back(f32_view(nk, {1, l.num_kv_heads, s, hd}));
      inputs.push_back(f32_view(nv, {1, l.num_kv_heads, s, hd}));
    }
    b.run(decoder_layer_prefill_name(l.index), inputs, outputs);
    if (l.owns_kv) {
      st.cache.write_prefill(l.index, std::span(nk.data(), kv_n), std::span(nv.data(), kv_n), s, valid);
    }
    std::swap(hidden_, hidden_next_);
  }

  // LM head on the last valid row only; soft-capping on the host.
  const TensorView last{DType::kF32, Shape{1, 1, d}, hidden_.data() + (valid - 1) * d};
  const TensorBuffer lout = f32_buffer(logits_, {1, 1, t.vocab_size});
  b.run(kLmHead, std::span(&last, 1), std::span(&lout, 1));
  apply_final_softcap(logits_, t.final_logit_softcapping, st.pool);
  st.past_len = valid;
  st.prefilled = true;
  return logits_;
}

}  // namespace staticlm
