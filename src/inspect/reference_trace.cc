#include "inspect/reference_trace.h"

#include <algorithm>
#include <memory>

#include "base/error.h"
#include "inspect/metrics.h"
#include "tensor/safetensors.h"

namespace staticlm::inspect {

Trace dynamic_trace(DynamicReference& ref, const ProcessorBatch& batch, std::int64_t max_seq, const TracePlan& plan,
                    int layers) {
  Trace t;
  t.source = "dynamic";
  const auto ids = batch.input_ids.as<std::int64_t>();
  t.input_ids.assign(ids.begin(), ids.end());
  DynamicPrompt prompt;
  prompt.input_ids = t.input_ids;
  if (batch.pixel_values) {
    const auto p = batch.pixel_values->as<float>();
    t.pixel_values.assign(p.begin(), p.end());
    const auto q = batch.image_position_ids->as<std::int64_t>();
    t.image_position_ids.assign(q.begin(), q.end());
    prompt.pixel_values = t.pixel_values;
    prompt.image_position_ids = t.image_position_ids;
  }
  DynamicStep p = ref.prefill(prompt);
  t.token_embeddings = ref.token_embeddings();
  t.per_layer_inputs = ref.per_layer_inputs();
  t.image_features = ref.image_features();
  t.vision_layers = ref.vision_layer_outputs();
  t.inputs_embeds = ref.inputs_embeds();
  const std::int64_t n = static_cast<std::int64_t>(t.input_ids.size());
  t.mask_allowed.resize(layers);
  t.rope_cos.resize(layers);
  t.rope_sin.resize(layers);
  for (int i = 0; i < layers; ++i) {
    auto& m = t.mask_allowed[i];
    m.assign(n * max_seq, 0);
    for (std::int64_t q = 0; q < n; ++q) {
      for (std::int64_t k = 0; k < n; ++k) m[q * max_seq + k] = ref.attends(i, q, k) ? 1 : 0;
    }
    ref.rope_tables(i, n, t.rope_cos[i], t.rope_sin[i]);
  }
  t.prefill_logits = std::move(p.logits);
  t.prefill_hidden = std::move(p.hidden);

  // Greedy on its own tokens; the first decode_steps steps are kept for step 7.
  std::int64_t token = argmax(t.prefill_logits);
  t.generated.push_back(token);
  t.generated_margin.push_back(static_cast<float>(top2_margin(t.prefill_logits)));
  std::int64_t steps = 0;
  while ((steps < plan.decode_steps || static_cast<std::int64_t>(t.generated.size()) < plan.gen_steps) &&
         ref.past_len() < max_seq - 1) {
    DynamicStep s = ref.decode(token);
    if (steps < plan.decode_steps) {
      t.decode_tokens.push_back(token);
      t.decode_logits.push_back(s.logits);
      t.decode_hidden.push_back(std::move(s.hidden));
    }
    ++steps;
    token = argmax(s.logits);
    t.generated.push_back(token);
    t.generated_margin.push_back(static_cast<float>(top2_margin(s.logits)));
  }
  t.generated.resize(std::min<std::size_t>(t.generated.size(), static_cast<std::size_t>(plan.gen_steps)));
  t.generated_margin.resize(t.generated.size());
  return t;
}

namespace {

std::vector<float> floats(const TensorView& v) {
  const auto* p = static_cast<const float*>(v.data);
  return std::vector<float>(p, p + v.shape.numel());
}

std::vector<std::int64_t> ints(const TensorView& v) {
  const auto* p = static_cast<const std::int64_t*>(v.data);
  return std::vector<std::int64_t>(p, p + v.shape.numel());
}

}  // namespace

Golden load_golden(const std::string& path, std::int64_t max_seq, int layers) {
  const auto file = SafetensorsFile::open(path);
  Golden g;
  g.metadata = file->metadata();
  Trace& t = g.trace;
  t.source = "golden:" + path;
  std::vector<std::unique_ptr<TensorView>> views;  // stable addresses for the lookups below
  auto bad = [&](const std::string& name, const std::string& why) { invalid_file(path + ": tensor " + name + ": " + why); };
  // Every tensor the golden format defines is F32, except the id tensors (I64).
  auto get = [&](const std::string& name, DType dtype) -> const TensorView* {
    if (!file->contains(name)) return nullptr;
    views.push_back(std::make_unique<TensorView>(file->get(name)));
    const TensorView* v = views.back().get();
    if (v->dtype != dtype) bad(name, std::string("dtype ") + dtype_name(v->dtype) + ", expected " + dtype_name(dtype));
    return v;
  };
  if (const TensorView* v = get("input_ids", DType::kI64)) {
    t.input_ids = ints(*v);
  } else if (auto it = g.metadata.find("prompt_ids"); it != g.metadata.end()) {
    std::string s = it->second;
    std::size_t pos = 0;
    while (pos < s.size()) {
      const std::size_t comma = std::min(s.find(',', pos), s.size());
      try {
        t.input_ids.push_back(std::stoll(s.substr(pos, comma - pos)));
      } catch (const std::exception&) {
        invalid_file(path + ": metadata prompt_ids: '" + s + "' is not a comma-separated list of token ids");
      }
      pos = comma + 1;
    }
  } else {
    invalid_file(path + ": no input_ids tensor and no prompt_ids metadata: not a tools/hf_golden.py file");
  }
  g.prompt_ids = t.input_ids;
  const std::int64_t n = static_cast<std::int64_t>(t.input_ids.size());
  if (n == 0) invalid_file(path + ": the prompt is empty");
  auto rows_of = [&](const std::string& name, const TensorView& v, std::int64_t rows) {
    if (v.shape.rank() < 1 || v.shape[0] != rows) {
      bad(name, "shape " + v.shape.to_string() + ", expected " + std::to_string(rows) + " rows");
    }
  };
  if (const TensorView* v = get("pixel_values", DType::kF32)) t.pixel_values = floats(*v);
  if (const TensorView* v = get("image_position_ids", DType::kI64)) t.image_position_ids = ints(*v);
  for (auto [name, field] : {std::pair{"token_embeddings", &t.token_embeddings}, {"per_layer_inputs", &t.per_layer_inputs},
                             {"inputs_embeds", &t.inputs_embeds}}) {
    if (const TensorView* v = get(name, DType::kF32)) {
      rows_of(name, *v, n);
      *field = floats(*v);
    }
  }
  if (const TensorView* v = get("image_features", DType::kF32)) t.image_features = floats(*v);
  // Per-layer tensors: all layers or none.
  auto per_layer = [&](const std::string& prefix, DType dtype) {
    std::vector<const TensorView*> out;
    for (int i = 0; i < layers; ++i) out.push_back(get(prefix + "." + std::to_string(i), dtype));
    const auto found = std::count_if(out.begin(), out.end(), [](const TensorView* v) { return v != nullptr; });
    if (found == 0) return std::vector<const TensorView*>{};
    for (int i = 0; i < layers; ++i) {
      if (out[i] == nullptr) bad(prefix + "." + std::to_string(i), "missing (the file has other layers' " + prefix + ")");
    }
    return out;
  };
  for (const TensorView* v : per_layer("prefill_hidden", DType::kF32)) {
    rows_of("prefill_hidden", *v, n);
    t.prefill_hidden.push_back(floats(*v));
  }
  const auto cos = per_layer("rope_cos", DType::kF32), sin = per_layer("rope_sin", DType::kF32);
  for (std::size_t i = 0; i < cos.size() && i < sin.size(); ++i) {
    rows_of("rope_cos." + std::to_string(i), *cos[i], n);
    rows_of("rope_sin." + std::to_string(i), *sin[i], n);
    t.rope_cos.push_back(floats(*cos[i]));
    t.rope_sin.push_back(floats(*sin[i]));
  }
  // Masks as dumped: [T, T] allowed (U8 0/1), widened to [T, max_seq] (later keys never allowed).
  for (const TensorView* v : per_layer("mask_allowed", DType::kU8)) {
    if (v->shape.numel() != n * n) bad("mask_allowed", "shape " + v->shape.to_string() + ", expected [T, T] with T = " + std::to_string(n));
    std::vector<std::uint8_t> m(n * max_seq, 0);
    const auto* p = static_cast<const std::uint8_t*>(v->data);
    for (std::int64_t q = 0; q < n; ++q) std::copy(p + q * n, p + (q + 1) * n, m.begin() + q * max_seq);
    t.mask_allowed.push_back(std::move(m));
  }
  if (const TensorView* v = get("prefill_logits", DType::kF32)) t.prefill_logits = floats(*v);
  const TensorView* tokens = get("tokens", DType::kI64);
  if (tokens) t.generated = ints(*tokens);
  if (const TensorView* v = get("decode_logits", DType::kF32)) {
    const std::int64_t steps = v->shape.rank() == 2 ? v->shape[0] : -1;
    if (steps < 0 || (!t.prefill_logits.empty() && v->shape[1] != static_cast<std::int64_t>(t.prefill_logits.size()))) {
      bad("decode_logits", "shape " + v->shape.to_string() + ", expected [steps, vocab]");
    }
    if (static_cast<std::int64_t>(t.generated.size()) < steps) bad("decode_logits", "more rows than tokens - 1");
    const std::vector<float> all = floats(*v);
    const std::int64_t vocab = v->shape[1];
    for (std::int64_t j = 0; j < steps; ++j) {
      t.decode_tokens.push_back(t.generated[j]);  // row j: logits after feeding tokens[j]
      t.decode_logits.emplace_back(all.begin() + j * vocab, all.begin() + (j + 1) * vocab);
    }
    // tokens[0] was chosen by the prefill logits, tokens[j + 1] by decode row j.
    if (!t.prefill_logits.empty()) {
      t.generated_margin.push_back(static_cast<float>(top2_margin(t.prefill_logits)));
      for (const auto& row : t.decode_logits) t.generated_margin.push_back(static_cast<float>(top2_margin(row)));
    }
    const auto hidden = per_layer("decode_hidden", DType::kF32);
    if (!hidden.empty()) {
      t.decode_hidden.assign(steps, std::vector<std::vector<float>>(layers));
      for (int i = 0; i < layers; ++i) {
        rows_of("decode_hidden." + std::to_string(i), *hidden[i], steps);
        const std::vector<float> h = floats(*hidden[i]);
        const std::int64_t d = steps > 0 ? static_cast<std::int64_t>(h.size()) / steps : 0;
        for (std::int64_t j = 0; j < steps; ++j) t.decode_hidden[j][i].assign(h.begin() + j * d, h.begin() + (j + 1) * d);
      }
    }
  }
  return g;
}

}  // namespace staticlm::inspect
