#include "inspect/static_trace.h"

#include <algorithm>
#include <cstring>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "inspect/metrics.h"
#include "runtime/runtime.h"

namespace staticlm::inspect {

namespace {

// Which part of the run the observed calls belong to.
enum class Phase { kPrefill, kDecode, kOff };

int index_of(const std::vector<TensorSpec>& specs, const std::string& name) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// The first `rows` rows of a [1, S, ...] f32 tensor.
std::vector<float> leading_rows(const TensorView& t, std::int64_t rows) {
  const std::int64_t row = t.shape.numel() / t.shape[1];
  const auto* p = static_cast<const float*>(t.data);
  return std::vector<float>(p, p + rows * row);
}

std::vector<float> leading_rows(const TensorBuffer& t, std::int64_t rows) { return leading_rows(t.view(), rows); }

// Reads step tensors off each call of the static run.
class Capture {
 public:
  Capture(Trace& trace, std::int64_t t, int layers, bool pre_negated_sin)
      : trace_(trace), t_(t), pre_negated_sin_(pre_negated_sin) {
    trace_.prefill_hidden.resize(layers);
    trace_.mask_allowed.resize(layers);
    trace_.rope_cos.resize(layers);
    trace_.rope_sin.resize(layers);
  }
  Phase phase = Phase::kOff;

  void operator()(const SubgraphCall& c) {
    if (phase == Phase::kOff) return;
    const std::string& g = c.signature.name;
    if (phase == Phase::kDecode) {
      if (g.rfind("decoder_layer_decode_", 0) == 0) {
        const int layer = std::stoi(g.substr(std::strlen("decoder_layer_decode_")));
        auto& step = trace_.decode_hidden.back();
        if (static_cast<int>(step.size()) <= layer) step.resize(layer + 1);
        step[layer] = leading_rows(c.outputs[index_of(c.signature.outputs, "hidden_states")], 1);
      }
      return;
    }
    if (g == kTokenEmbedding) {
      trace_.token_embeddings = leading_rows(c.outputs[0], t_);
    } else if (g == kPleProjection) {
      trace_.per_layer_inputs = leading_rows(c.outputs[0], t_);
    } else if (g == kVisionPrefill) {
      const auto* p = static_cast<const float*>(c.outputs[0].data);
      trace_.image_features.assign(p, p + c.outputs[0].shape.numel());
    } else if (g == kMultimodalFusion) {
      trace_.inputs_embeds = leading_rows(c.outputs[0], t_);
    } else if (g.rfind("decoder_layer_prefill_", 0) == 0) {
      const int layer = std::stoi(g.substr(std::strlen("decoder_layer_prefill_")));
      prefill_layer(layer, c);
    }
  }

 private:
  void prefill_layer(int layer, const SubgraphCall& c) {
    const auto& in = c.signature.inputs;
    const TensorView& mask = c.inputs[index_of(in, "attention_mask")];
    const std::int64_t s = mask.shape[3];
    const auto* m = static_cast<const float*>(mask.data);
    // The additive mask's allowed pattern, compared as NEWER TICO does: == 0.
    auto& allowed = trace_.mask_allowed[layer];
    allowed.resize(t_ * s);
    for (std::int64_t i = 0; i < t_ * s; ++i) allowed[i] = m[i] == 0.0f ? 1 : 0;
    trace_.rope_cos[layer] = leading_rows(c.inputs[index_of(in, "cos")], t_);
    std::vector<float> sin = leading_rows(c.inputs[index_of(in, "sin")], t_);
    if (pre_negated_sin_) {
      // The host negated the first half of sin once (runtime/rope.h); undo it for HF's convention.
      const std::int64_t hd = c.inputs[index_of(in, "sin")].shape[2];
      for (std::int64_t r = 0; r < t_; ++r) {
        for (std::int64_t j = 0; j < hd / 2; ++j) sin[r * hd + j] = -sin[r * hd + j];
      }
    }
    trace_.rope_sin[layer] = std::move(sin);
    trace_.prefill_hidden[layer] = leading_rows(c.outputs[index_of(c.signature.outputs, "hidden_states")], t_);
  }

  Trace& trace_;
  std::int64_t t_;
  bool pre_negated_sin_;
};

}  // namespace

Trace static_trace(const StaticRun& run, const StaticInputs& inputs, const TracePlan& plan, const std::string& source) {
  const Checkpoint& ck = *run.checkpoint;
  Trace trace;
  trace.source = source;
  const auto raw = inputs.raw_input_ids.as<std::int64_t>();
  trace.input_ids.assign(raw.begin(), raw.end());
  if (inputs.pixel_values) {
    const auto p = inputs.pixel_values->as<float>();
    trace.pixel_values.assign(p.begin(), p.end());
    const auto q = inputs.image_position_ids->as<std::int64_t>();
    trace.image_position_ids.assign(q.begin(), q.end());
  }
  const std::int64_t t = inputs.length();

  CpuBackendOptions options = run.backend;
  // Each vision encoder layer's output over the valid patches: the canonical grid puts them
  // first (patch i < H*W), padding after.
  const std::int64_t valid_patches = run.profile.patch_grid_height * run.profile.patch_grid_width;
  options.vision_layer_tap = [&trace, valid_patches](int, const float* x, std::int64_t n, std::int64_t dv) {
    trace.vision_layers.emplace_back(x, x + std::min(n, valid_patches) * dv);
  };
  std::unique_ptr<Backend> cpu =
      run.make_backend ? run.make_backend(ck, run.profile, run.backend) : CpuBackend::create(ck, run.profile, options);
  ObservedBackend backend(*cpu);
  Capture capture(trace, t, static_cast<int>(ck.layers().size()), run.profile.rope_sine == RopeSine::kPreNegatedSin);
  backend.add_observer([&capture](const SubgraphCall& c) { capture(c); });
  for (const auto& o : run.observers) backend.add_observer(o);
  RuntimeOptions ro;
  ro.mask_fill_value = run.mask_fill_value;
  auto runtime = Runtime::create(backend, ck.config(), ck.layers(), ro);

  const PrefillInput pi = prefill_input(inputs);
  capture.phase = Phase::kPrefill;
  const auto logits = runtime->prefill(pi);
  trace.prefill_logits.assign(logits.begin(), logits.end());
  // The generation below encodes the image again; only this prefill's layers are kept.
  const std::size_t vision_layers = trace.vision_layers.size();
  // A text prompt has no fusion call: the decoder's input is the token embedding.
  if (trace.inputs_embeds.empty()) trace.inputs_embeds = trace.token_embeddings;

  capture.phase = Phase::kDecode;
  std::int64_t next = argmax(trace.prefill_logits);
  for (std::int64_t j = 0; j < plan.decode_steps && runtime->remaining_capacity() > 0; ++j) {
    if (!plan.feed.empty() && j >= static_cast<std::int64_t>(plan.feed.size())) break;
    const std::int64_t token = plan.feed.empty() ? next : plan.feed[j];
    trace.decode_tokens.push_back(token);
    trace.decode_hidden.emplace_back();
    const auto step = runtime->decode(token);
    trace.decode_logits.emplace_back(step.begin(), step.end());
    next = argmax(step);
  }

  capture.phase = Phase::kOff;
  if (plan.gen_steps > 0) {
    GenerateOptions g;
    g.max_new_tokens = plan.gen_steps;
    g.sampling.temperature = 0;  // greedy, no EOS stop (TICO's generate_greedy(eos=None))
    g.record_logits = true;      // for each choice's margin
    const GenerationResult r = runtime->generate(pi, g, [](std::int64_t) { return true; });
    trace.generated = r.tokens;
    const std::size_t vocab = r.prefill_logits.size();
    trace.generated_margin.push_back(static_cast<float>(top2_margin(r.prefill_logits)));
    for (std::size_t j = 0; vocab > 0 && (j + 1) * vocab <= r.decode_logits.size(); ++j) {
      trace.generated_margin.push_back(
          static_cast<float>(top2_margin(std::span(r.decode_logits).subspan(j * vocab, vocab))));
    }
    trace.generated_margin.resize(trace.generated.size());
  }
  trace.vision_layers.resize(vision_layers);
  return trace;
}

}  // namespace staticlm::inspect
