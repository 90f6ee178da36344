#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/embedding_graphs.h"
#include "backends/cpu/resident_weights.h"
#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "model/checkpoint.h"

namespace staticlm {

std::unique_ptr<CpuBackend> CpuBackend::create(const ModelConfig& config, const std::vector<LayerInfo>& layers,
                                               const cpu::WeightGetter& weights, const SubgraphProfile& profile,
                                               const CpuBackendOptions& options) {
  return create(config, layers, weights, profile, options, {});
}

std::unique_ptr<CpuBackend> CpuBackend::create(const ModelConfig& config, const std::vector<LayerInfo>& layers,
                                               const cpu::WeightGetter& weights, const SubgraphProfile& profile,
                                               const CpuBackendOptions& options, const cpu::ReleasedRange& released) {
  std::unique_ptr<CpuBackend> b(new CpuBackend());
  b->config_ = config;
  b->layers_ = layers;
  b->profile_ = profile;
  b->options_ = options;
  b->signatures_ = gemma4_subgraph_signatures(config, layers, profile);
  b->weights_ = cpu::load_text_weights(config, layers, weights);
  cpu::set_bf16_activations(b->weights_, options.bf16_activations);
  if (options.resident_weights) b->weights_.resident = cpu::make_resident(cpu::streamed_matrices(b->weights_), released);
  for (std::size_t i = 0; i < b->signatures_.size(); ++i) {
    const std::string& n = b->signatures_[i].name;
    Entry e{Kind::kLmHead, -1, i};
    if (n == kTokenEmbedding) e.kind = Kind::kTokenEmbedding;
    else if (n == kPleEmbedding) e.kind = Kind::kPleEmbedding;
    else if (n == kPleProjection) e.kind = Kind::kPleProjection;
    else if (n == kVisionPrefill) {
      e.kind = Kind::kVision;
      b->vision_ = cpu::VisionPrefill::create(config, weights, profile, options.bf16_activations);
      b->vision_->set_layer_tap(options.vision_layer_tap);
    }
    else if (n == kMultimodalFusion) e.kind = Kind::kFusion;
    else if (n == kLmHead) e.kind = Kind::kLmHead;
    else {
      for (const LayerInfo& l : layers) {
        if (n == decoder_layer_prefill_name(l.index)) e = {Kind::kPrefillLayer, l.index, i};
        if (n == decoder_layer_decode_name(l.index)) e = {Kind::kDecodeLayer, l.index, i};
        for (std::int64_t q : profile.append_lengths) {
          if (n == decoder_layer_append_name(l.index, q)) e = {Kind::kAppendLayer, l.index, i, q};
        }
      }
      if (e.layer < 0) internal_error("cpu backend: no implementation for subgraph " + n);
    }
    b->entries_[n] = e;
  }
  return b;
}

std::unique_ptr<CpuBackend> CpuBackend::create(const Checkpoint& checkpoint, const SubgraphProfile& profile,
                                               const CpuBackendOptions& options) {
  const TensorStore& store = checkpoint.weights();
  // The map's pages --no-mmap copied would otherwise stay in the resident set beside the copy.
  return create(checkpoint.config(), checkpoint.layers(),
                [&store](const std::string& name) { return store.get(name); }, profile, options,
                [&store](const void* p, std::size_t n) {
                  if (store.maps(p)) release_mapped_pages(p, n);
                });
}

namespace {

const float* f32_in(const TensorView& v) { return static_cast<const float*>(v.data); }
float* f32_out(const TensorBuffer& b) { return static_cast<float*>(b.data); }
std::span<const std::int64_t> ids_in(const TensorView& v) {
  return {static_cast<const std::int64_t*>(v.data), static_cast<std::size_t>(v.numel())};
}

}  // namespace

void CpuBackend::run(const std::string& name, std::span<const TensorView> in, std::span<const TensorBuffer> out) {
  const auto it = entries_.find(name);
  if (it == entries_.end()) invalid_argument("backend cpu has no subgraph named \"" + name + "\"");
  const Entry& e = it->second;
  const std::int64_t dynamic = check_subgraph_call(signatures_[e.signature], in, out);
  const TextConfig& t = config_.text;
  const float eps = static_cast<float>(t.rms_norm_eps);
  switch (e.kind) {
    case Kind::kTokenEmbedding:
      cpu::run_token_embedding(weights_, ids_in(in[0]), f32_out(out[0]));
      return;
    case Kind::kPleEmbedding:
      cpu::run_ple_embedding(weights_, t.hidden_size_per_layer_input, ids_in(in[0]), f32_out(out[0]));
      return;
    case Kind::kPleProjection:
      cpu::run_ple_projection(weights_, t.hidden_size_per_layer_input, eps, dynamic, f32_in(in[0]), f32_in(in[1]),
                              f32_out(out[0]), workspace_, options_.pool);
      return;
    case Kind::kVision:
      vision_->run(f32_in(in[0]), f32_out(out[0]), options_.pool);
      return;
    case Kind::kFusion:
      cpu::run_multimodal_fusion(profile_.max_seq, t.hidden_size, *profile_.visual_start_idx,
                                 profile_.num_visual_tokens, f32_in(in[0]), f32_in(in[1]), f32_out(out[0]));
      return;
    case Kind::kPrefillLayer:
    case Kind::kDecodeLayer:
    case Kind::kAppendLayer:
      run_layer(e, in, out);
      return;
    case Kind::kLmHead:
      cpu::run_lm_head(weights_, eps, f32_in(in[0]), f32_out(out[0]), workspace_, options_.pool);
      return;
  }
}

void CpuBackend::run_layer(const Entry& e, std::span<const TensorView> in, std::span<const TensorBuffer> out) {
  const LayerInfo& l = layers_[static_cast<std::size_t>(e.layer)];
  const std::int64_t ple = config_.text.hidden_size_per_layer_input;
  cpu::DecoderLayerCall call;
  call.decode = e.kind == Kind::kDecodeLayer;
  call.append = e.kind == Kind::kAppendLayer ? e.append : 0;
  call.max_seq = profile_.max_seq;
  // Inputs in signature order: hidden, mask, cos, sin, [per_layer_input], [kv pair].
  std::size_t i = 0;
  call.hidden = f32_in(in[i++]);
  call.mask = f32_in(in[i++]);
  call.cos = f32_in(in[i++]);
  call.sin = f32_in(in[i++]);
  if (ple > 0) call.per_layer_input = f32_in(in[i++]);
  if (i < in.size()) {
    call.kv_k = f32_in(in[i++]);
    call.kv_v = f32_in(in[i++]);
  }
  call.hidden_out = f32_out(out[0]);
  if (l.owns_kv) {
    call.new_k = f32_out(out[1]);
    call.new_v = f32_out(out[2]);
  }
  cpu::DecoderLayerOptions o;
  o.rope_sine = profile_.rope_sine;
  o.rms_norm_eps = static_cast<float>(config_.text.rms_norm_eps);
  o.skip_padded_rows = options_.skip_padded_rows;
  o.pool = options_.pool;
  cpu::run_decoder_layer(l, weights_.layers[static_cast<std::size_t>(e.layer)], config_.text.hidden_size, ple, o,
                         call, workspace_);
}

}  // namespace staticlm
