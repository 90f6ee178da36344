#include "inspect/inspector.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "base/error.h"

namespace staticlm::inspect {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// compare(), but a size mismatch gives NaN metrics (a failure) instead of an exception.
DiffMetrics diff(const std::vector<float>& actual, const std::vector<float>& reference) {
  if (actual.size() != reference.size()) {
    DiffMetrics m;
    m.count = static_cast<std::int64_t>(actual.size());
    m.max_abs = m.mean_abs = m.peir = m.cosine = m.rel_l2 = kNaN;
    return m;
  }
  return compare(actual, reference);
}

nlohmann::ordered_json metrics_json(const DiffMetrics& m) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  return {{"count", m.count}, {"max_abs", num(m.max_abs)}, {"mean_abs", num(m.mean_abs)},
          {"peir", num(m.peir)},  {"cosine", num(m.cosine)},   {"rel_l2", num(m.rel_l2)}};
}

std::string sizes(const std::vector<float>& a, const std::vector<float>& r) {
  return std::to_string(a.size()) + " values against " + std::to_string(r.size());
}

class StepBuilder {
 public:
  StepBuilder(int step, const Thresholds& t) {
    r_.step = step;
    r_.name = step_names()[step - 1];
    r_.bounds = t.of(step);
  }
  StepResult& result() { return r_; }
  void set(const std::string& name, double v) {
    for (auto& m : r_.metrics) {
      if (m.first == name) {
        m.second = v;
        return;
      }
    }
    r_.metrics.emplace_back(name, v);
  }
  void tensor_metrics(const DiffMetrics& m) {
    set("max_abs", m.max_abs);
    set("mean_abs", m.mean_abs);
    set("peir", m.peir);
    set("cosine", m.cosine);
    set("rel_l2", m.rel_l2);
  }
  void fail(const std::string& why) { r_.failed.push_back(why); }
  StepResult finish() {
    for (const Bound& b : r_.bounds) {
      const auto v = r_.metric(b.metric);
      if (!v) continue;  // a bound on a metric this run did not produce (e.g. ple on a model without PLE)
      if (!b.holds(*v)) {
        std::ostringstream s;
        s << b.metric << " " << *v << " (expected " << b.describe() << ")";
        r_.failed.push_back(s.str());
      }
    }
    r_.status = r_.failed.empty() ? "pass" : "fail";
    return std::move(r_);
  }
  StepResult not_applicable(const std::string& why) {
    r_.status = "n/a";
    r_.note = why;
    return std::move(r_);
  }

 private:
  StepResult r_;
};

// A required tensor missing on one side fails the step, naming the side.
bool present(StepBuilder& b, const std::vector<float>& actual, const std::vector<float>& reference,
             const std::string& what, const std::string& ref_name) {
  if (actual.empty()) b.fail("the static pipeline produced no " + what);
  if (reference.empty()) b.fail("the reference (" + ref_name + ") has no " + what);
  return !actual.empty() && !reference.empty();
}

StepResult step_inputs(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(1, c.thresholds);
  b.result().tensor = "llm_input_ids, attention_mask, valid_length, pixel_values";
  const StaticInputs& in = *c.inputs;
  const auto ids = in.llm_input_ids.as<std::int64_t>();
  const auto mask = in.attention_mask.as<std::uint8_t>();
  const std::int64_t s = static_cast<std::int64_t>(ids.size()), t = static_cast<std::int64_t>(r.input_ids.size());
  // The layout rebuilt from the reference's processor ids: placeholders -> pad id, right-padded.
  std::int64_t id_mismatch = 0, mask_mismatch = 0, pad_after = 0;
  for (std::int64_t i = 0; i < s; ++i) {
    std::int64_t expect = c.pad_token_id;
    if (i < t) expect = (c.image_token_id && r.input_ids[i] == *c.image_token_id) ? c.pad_token_id : r.input_ids[i];
    if (ids[i] != expect) ++id_mismatch;
    if ((mask[i] != 0) != (i < t)) ++mask_mismatch;
    if (i >= in.length() && ids[i] != c.pad_token_id) ++pad_after;
  }
  const TokenAgreement raw = agree(a.input_ids, r.input_ids);
  const std::int64_t raw_mismatch = (raw.compared - raw.matched) +
                                    std::abs(static_cast<std::int64_t>(a.input_ids.size()) - t);
  const std::int64_t length_mismatch = in.length() != t ? 1 : 0;
  std::int64_t pixel_mismatch = 0;
  double pixel_max = 0;
  if (a.pixel_values.empty() != r.pixel_values.empty()) {
    pixel_mismatch = 1;
    b.fail(std::string("pixel_values presence mismatch: ") + (a.pixel_values.empty() ? "only the reference" : "only the static side") +
           " has an image");
  } else if (!a.pixel_values.empty()) {
    const DiffMetrics px = diff(a.pixel_values, r.pixel_values);
    pixel_max = px.max_abs;
    if (a.image_position_ids != r.image_position_ids) {
      pixel_mismatch = 1;
      b.fail("image_position_ids differ from the reference's");
    }
  }
  const std::int64_t total = id_mismatch + mask_mismatch + raw_mismatch + length_mismatch + pixel_mismatch + pad_after;
  b.set("mismatches", static_cast<double>(total));
  if (!a.pixel_values.empty() || !r.pixel_values.empty()) b.set("pixel_max_abs", pixel_max);
  b.set("token_agreement", raw.rate());
  b.result().details = {{"T", t},
                        {"S", s},
                        {"llm_input_ids_mismatches", id_mismatch},
                        {"attention_mask_mismatches", mask_mismatch},
                        {"raw_input_ids_mismatches", raw_mismatch},
                        {"first_raw_mismatch", raw.first_mismatch},
                        {"valid_length", {{"static", in.length()}, {"expected", t}}},
                        {"non_pad_ids_after_T", pad_after}};
  if (pad_after > 0) b.fail(std::to_string(pad_after) + " ids past T are not the pad id");
  return b.finish();
}

StepResult step_embedding(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(2, c.thresholds);
  b.result().tensor = "inputs_embeds (token_embedding)";
  if (present(b, a.token_embeddings, r.token_embeddings, "token embeddings", r.source)) {
    const DiffMetrics m = diff(a.token_embeddings, r.token_embeddings);
    b.tensor_metrics(m);
    b.result().details["token_embedding"] = metrics_json(m);
  }
  if (!a.per_layer_inputs.empty() || !r.per_layer_inputs.empty()) {
    if (present(b, a.per_layer_inputs, r.per_layer_inputs, "per-layer inputs (PLE)", r.source)) {
      const DiffMetrics m = diff(a.per_layer_inputs, r.per_layer_inputs);
      b.set("ple_peir", m.peir);
      b.set("ple_cosine", m.cosine);
      b.result().details["per_layer_inputs"] = metrics_json(m);
    }
  }
  return b.finish();
}

void layer_table(StepBuilder& b, const std::vector<std::vector<DiffMetrics>>& per_layer_steps, const Thresholds& t) {
  // per_layer_steps[layer][k]: the layer's metrics at each compared position (prefill: one).
  const std::optional<double> bound = t.value(b.result().step, "layer_rel_l2");
  double worst = 0;
  for (std::size_t i = 0; i < per_layer_steps.size(); ++i) {
    LayerRow row;
    row.layer = static_cast<int>(i);
    // The worst position (largest rel_l2; a NaN is the worst of all).
    bool first = true;
    for (const DiffMetrics& m : per_layer_steps[i]) {
      if (first || (!std::isnan(row.metrics.rel_l2) && (std::isnan(m.rel_l2) || m.rel_l2 > row.metrics.rel_l2))) {
        row.metrics = m;
      }
      first = false;
    }
    row.pass = !bound || (std::isfinite(row.metrics.rel_l2) && row.metrics.rel_l2 <= *bound);
    if (!row.pass && !b.result().first_divergent_layer) b.result().first_divergent_layer = row.layer;
    worst = std::isnan(row.metrics.rel_l2) || std::isnan(worst) ? kNaN : std::max(worst, row.metrics.rel_l2);
    // Error grows along the stack; the layer that adds the most is where to look first when
    // every layer drifts a little (quantization), the first over the bound when one layer breaks.
    row.added = row.metrics.rel_l2 - (i == 0 ? 0.0 : b.result().layers.back().metrics.rel_l2);
    auto& top = b.result().largest_increase_layer;
    if (!top || row.added > b.result().layers[*top].added) top = row.layer;
    b.result().layers.push_back(row);
  }
  if (!per_layer_steps.empty()) b.set("layer_rel_l2", worst);
}

StepResult step_vision(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(3, c.thresholds);
  b.result().tensor = "image_embeds (vision_prefill)";
  if (a.image_features.empty() && r.image_features.empty()) return b.not_applicable("no image in the prompt");
  if (present(b, a.image_features, r.image_features, "image features", r.source)) {
    const DiffMetrics m = diff(a.image_features, r.image_features);
    if (!std::isfinite(m.max_abs) && a.image_features.size() != r.image_features.size()) {
      b.fail("image features shape: " + sizes(a.image_features, r.image_features));
    }
    b.tensor_metrics(m);
  }
  if (!a.vision_layers.empty() && a.vision_layers.size() == r.vision_layers.size()) {
    std::vector<std::vector<DiffMetrics>> rows;
    for (std::size_t i = 0; i < a.vision_layers.size(); ++i) rows.push_back({diff(a.vision_layers[i], r.vision_layers[i])});
    layer_table(b, rows, c.thresholds);
  }
  return b.finish();
}

StepResult step_fusion(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(4, c.thresholds);
  b.result().tensor = "inputs_embeds (multimodal_fusion_prefill)";
  if (a.image_features.empty() && r.image_features.empty()) return b.not_applicable("no image in the prompt");
  if (present(b, a.inputs_embeds, r.inputs_embeds, "fused inputs_embeds", r.source)) {
    const DiffMetrics m = diff(a.inputs_embeds, r.inputs_embeds);
    b.tensor_metrics(m);
    // The rows outside the image span are text rows and must equal step 2's.
    if (c.image_token_id && a.inputs_embeds.size() == a.token_embeddings.size()) {
      const std::size_t d = a.input_ids.empty() ? 0 : a.inputs_embeds.size() / a.input_ids.size();
      std::int64_t text_rows_changed = 0;
      for (std::size_t i = 0; i < a.input_ids.size(); ++i) {
        if (a.input_ids[i] == *c.image_token_id) continue;
        if (!std::equal(a.inputs_embeds.begin() + i * d, a.inputs_embeds.begin() + (i + 1) * d,
                        a.token_embeddings.begin() + i * d)) {
          ++text_rows_changed;
        }
      }
      b.result().details["text_rows_changed_by_fusion"] = text_rows_changed;
      if (text_rows_changed > 0) b.fail(std::to_string(text_rows_changed) + " text rows changed by the fusion");
    }
  }
  return b.finish();
}

StepResult step_masks_rope(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(5, c.thresholds);
  b.result().tensor = "attention_mask, cos, sin (every layer)";
  std::int64_t mismatches = 0;
  double rope = 0;
  const std::size_t layers = a.mask_allowed.size();
  if (layers == 0 || r.mask_allowed.size() != layers || r.rope_cos.size() != layers) {
    b.fail("the reference (" + r.source + ") has masks and RoPE tables for " + std::to_string(r.mask_allowed.size()) +
           " layers, the static pipeline for " + std::to_string(layers));
    return b.finish();
  }
  nlohmann::ordered_json per_layer = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < layers; ++i) {
    std::int64_t mm = 0;
    if (a.mask_allowed[i].size() != r.mask_allowed[i].size()) {
      mm = static_cast<std::int64_t>(std::max(a.mask_allowed[i].size(), r.mask_allowed[i].size()));
    } else {
      for (std::size_t k = 0; k < a.mask_allowed[i].size(); ++k) mm += a.mask_allowed[i][k] != r.mask_allowed[i][k];
    }
    const DiffMetrics cs = diff(a.rope_cos[i], r.rope_cos[i]), sn = diff(a.rope_sin[i], r.rope_sin[i]);
    const double rm = std::isnan(cs.max_abs) || std::isnan(sn.max_abs) ? kNaN : std::max(cs.max_abs, sn.max_abs);
    mismatches += mm;
    rope = std::isnan(rm) || std::isnan(rope) ? kNaN : std::max(rope, rm);
    per_layer.push_back({{"layer", i}, {"mask_mismatches", mm}, {"rope_max_abs", std::isnan(rm) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(rm)}});
  }
  b.set("mask_mismatches", static_cast<double>(mismatches));
  b.set("rope_max_abs", rope);
  b.result().details["layers"] = per_layer;
  return b.finish();
}

// Two greedy choices agree when they are equal, or when the reference's own top-2 margin is
// within the noise between the two sides' logits: a near-tie that rounding may legitimately flip
// (random-weight checkpoints are full of them), not a failure. The noise is the typical
// difference, not the largest (a flip always lies within twice the largest, so that would
// excuse every flip): for errors e ~ N(0, s^2), mean |e| = 0.80 s, and the difference of two
// logits' errors has deviation 1.41 s, so 4 mean|d| is about 2.3 deviations of a margin's noise.
double tie_tolerance(const DiffMetrics& m) { return std::isfinite(m.mean_abs) ? 4 * m.mean_abs : 0.0; }
bool choice_agrees(std::int64_t a, std::int64_t r, double reference_margin, const DiffMetrics& m) {
  return a == r || reference_margin <= tie_tolerance(m);
}

void logits_metrics(StepBuilder& b, const DiffMetrics& m, double argmax_rate) {
  b.set("max_abs", m.max_abs);
  b.set("mean_abs", m.mean_abs);
  b.set("peir", m.peir);
  b.set("cosine", m.cosine);
  b.set("argmax", argmax_rate);
}

StepResult step_prefill(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(6, c.thresholds);
  b.result().tensor = "logits after the last prompt token";
  if (!present(b, a.prefill_logits, r.prefill_logits, "prefill logits", r.source)) return b.finish();
  const DiffMetrics m = diff(a.prefill_logits, r.prefill_logits);
  const std::int64_t am = argmax(a.prefill_logits), ar = argmax(r.prefill_logits);
  const double margin = top2_margin(r.prefill_logits);
  logits_metrics(b, m, choice_agrees(am, ar, margin, m) ? 1.0 : 0.0);
  b.result().details = {{"logits", metrics_json(m)},
                        {"argmax", {{"static", am}, {"reference", ar}, {"reference_margin", margin}}}};
  if (!r.prefill_hidden.empty()) {
    if (r.prefill_hidden.size() != a.prefill_hidden.size()) {
      b.fail("the reference has " + std::to_string(r.prefill_hidden.size()) + " layer outputs, the model " +
             std::to_string(a.prefill_hidden.size()));
    } else {
      std::vector<std::vector<DiffMetrics>> rows;
      for (std::size_t i = 0; i < a.prefill_hidden.size(); ++i) rows.push_back({diff(a.prefill_hidden[i], r.prefill_hidden[i])});
      layer_table(b, rows, c.thresholds);
    }
  } else {
    b.result().note = "no per-layer hidden states in the reference: no localisation";
  }
  return b.finish();
}

StepResult step_decode(const Trace& a, const Trace& r, const CompareContext& c) {
  StepBuilder b(7, c.thresholds);
  const std::size_t n = std::min(a.decode_logits.size(), r.decode_logits.size());
  b.result().tensor = "logits of " + std::to_string(n) + " decode steps";
  if (n == 0) {
    if (r.decode_logits.empty() && a.decode_logits.empty()) return b.not_applicable("no decode steps asked for");
    b.fail("no decode step to compare (static " + std::to_string(a.decode_logits.size()) + ", reference " +
           std::to_string(r.decode_logits.size()) + ")");
    return b.finish();
  }
  DiffMetrics worst;
  worst.cosine = 1;
  std::int64_t agree_count = 0;
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  const bool localise = !r.decode_hidden.empty() && r.decode_hidden.size() >= n;
  std::vector<std::vector<DiffMetrics>> rows(localise ? a.decode_hidden.front().size() : 0);
  for (std::size_t j = 0; j < n; ++j) {
    const DiffMetrics m = diff(a.decode_logits[j], r.decode_logits[j]);
    const std::int64_t am = argmax(a.decode_logits[j]), ar = argmax(r.decode_logits[j]);
    const double margin = top2_margin(r.decode_logits[j]);
    agree_count += choice_agrees(am, ar, margin, m);
    auto nanmax = [](double x, double y) { return std::isnan(x) || std::isnan(y) ? kNaN : std::max(x, y); };
    worst.count += m.count;
    worst.max_abs = nanmax(worst.max_abs, m.max_abs);
    worst.mean_abs = nanmax(worst.mean_abs, m.mean_abs);
    worst.peir = nanmax(worst.peir, m.peir);
    worst.cosine = std::isnan(m.cosine) || std::isnan(worst.cosine) ? kNaN : std::min(worst.cosine, m.cosine);
    auto row = metrics_json(m);
    row["fed"] = j < a.decode_tokens.size() ? nlohmann::ordered_json(a.decode_tokens[j]) : nlohmann::ordered_json(nullptr);
    row["argmax_static"] = am;
    row["argmax_reference"] = ar;
    row["reference_margin"] = margin;
    steps.push_back(row);
    if (localise) {
      for (std::size_t i = 0; i < rows.size() && i < a.decode_hidden[j].size() && i < r.decode_hidden[j].size(); ++i) {
        rows[i].push_back(diff(a.decode_hidden[j][i], r.decode_hidden[j][i]));
      }
    }
  }
  logits_metrics(b, worst, static_cast<double>(agree_count) / static_cast<double>(n));
  b.result().details["steps"] = steps;
  if (!a.decode_tokens.empty() && !r.decode_tokens.empty()) {
    const TokenAgreement fed = agree(std::span(a.decode_tokens).first(n), std::span(r.decode_tokens).first(std::min(n, r.decode_tokens.size())));
    if (fed.first_mismatch >= 0) b.fail("the two sides were fed different tokens at decode step " + std::to_string(fed.first_mismatch));
  }
  if (localise) layer_table(b, rows, c.thresholds);
  return b.finish();
}

StepResult step_generation(const Trace& a, const Trace& r, const CompareContext& c, const DiffMetrics& noise) {
  StepBuilder b(8, c.thresholds);
  b.result().tensor = "greedy tokens";
  if (a.generated.empty() && r.generated.empty()) return b.not_applicable("no generation steps asked for");
  if (r.generated.empty()) {
    b.fail("the reference (" + r.source + ") has no generated tokens");
    return b.finish();
  }
  TokenAgreement t = agree(a.generated, r.generated);
  // After the sequences part, the rest compares different histories. A parting at a near-tie of
  // the reference (margin within the logit noise steps 6 and 7 measured) ends the comparison
  // there and counts as agreeing; anywhere else it is a mismatch, and every later token too.
  const double tolerance = tie_tolerance(noise);
  nlohmann::ordered_json near_tie = nullptr;
  if (t.first_mismatch >= 0 && t.first_mismatch < static_cast<std::int64_t>(r.generated_margin.size()) &&
      t.first_mismatch < t.compared && r.generated_margin[t.first_mismatch] <= tolerance) {
    near_tie = {{"position", t.first_mismatch}, {"reference_margin", r.generated_margin[t.first_mismatch]}};
    t.compared = t.first_mismatch + 1;
    t.matched = t.compared;
  }
  b.set("token_agreement", t.rate());
  b.result().details = {{"compared", t.compared},    {"matched", t.matched},       {"first_mismatch", t.first_mismatch},
                        {"tie_tolerance", tolerance}, {"near_tie", near_tie},      {"static", a.generated},
                        {"reference", r.generated}};
  return b.finish();
}

// The largest typical logit difference (mean |d|) of the prefill and decode steps both sides have.
DiffMetrics logit_noise(const Trace& a, const Trace& r) {
  DiffMetrics worst;
  worst.mean_abs = 0;
  auto take = [&](const std::vector<float>& x, const std::vector<float>& y) {
    if (x.empty() || x.size() != y.size()) return;
    const DiffMetrics m = compare(x, y);
    worst.mean_abs = std::isnan(m.mean_abs) || std::isnan(worst.mean_abs) ? std::nan("") : std::max(worst.mean_abs, m.mean_abs);
  };
  take(a.prefill_logits, r.prefill_logits);
  for (std::size_t j = 0; j < a.decode_logits.size() && j < r.decode_logits.size(); ++j) take(a.decode_logits[j], r.decode_logits[j]);
  return worst;
}

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";
  char buf[32];
  if (v == 0) return "0";
  if (std::fabs(v) >= 1e-3 && std::fabs(v) < 1e4) {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.2e", v);
  }
  return buf;
}

}  // namespace

std::optional<double> StepResult::metric(const std::string& n) const {
  for (const auto& m : metrics) {
    if (m.first == n) return m.second;
  }
  return std::nullopt;
}

bool Report::pass() const {
  return std::all_of(steps.begin(), steps.end(), [](const StepResult& s) { return s.pass(); });
}

Report compare_traces(const Trace& actual, const Trace& reference, const CompareContext& c) {
  if (c.inputs == nullptr) internal_error("compare_traces: no static inputs");
  Report report;
  report.reference = reference.source;
  report.tolerance = c.thresholds.tolerance;
  for (int step : c.steps) {
    switch (step) {
      case 1: report.steps.push_back(step_inputs(actual, reference, c)); break;
      case 2: report.steps.push_back(step_embedding(actual, reference, c)); break;
      case 3: report.steps.push_back(step_vision(actual, reference, c)); break;
      case 4: report.steps.push_back(step_fusion(actual, reference, c)); break;
      case 5: report.steps.push_back(step_masks_rope(actual, reference, c)); break;
      case 6: report.steps.push_back(step_prefill(actual, reference, c)); break;
      case 7: report.steps.push_back(step_decode(actual, reference, c)); break;
      case 8: report.steps.push_back(step_generation(actual, reference, c, logit_noise(actual, reference))); break;
      default: invalid_argument("--steps: step " + std::to_string(step) + " does not exist (1-8)");
    }
  }
  for (int want : {6, 7}) {
    for (const StepResult& s : report.steps) {
      if (s.step == want && s.first_divergent_layer && !report.first_divergent_layer) {
        report.first_divergent_layer = s.first_divergent_layer;
      }
    }
  }
  return report;
}

std::vector<int> parse_steps(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string part;
  auto number = [&](const std::string& s) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.empty() || v < 1 || v > 8) {
      invalid_argument("--steps " + text + ": '" + s + "' is not a step number 1-8 (e.g. 1-8, 6, 1,2,6-8)");
    }
    return v;
  };
  while (std::getline(ss, part, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(part));
    } else {
      const int lo = number(part.substr(0, dash)), hi = number(part.substr(dash + 1));
      if (lo > hi) invalid_argument("--steps " + text + ": range " + part + " runs backwards");
      for (int i = lo; i <= hi; ++i) out.push_back(i);
    }
  }
  if (out.empty()) invalid_argument("--steps: empty; give e.g. 1-8");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_table(const Report& r) {
  std::ostringstream o;
  char line[1024];
  auto bounds_of = [](const StepResult& s) {
    std::string bounds;
    for (const Bound& b : s.bounds) {
      if (!bounds.empty()) bounds += ' ';
      bounds += b.describe();
    }
    return bounds;
  };
  int width = 9;
  for (const StepResult& s : r.steps) width = std::max(width, static_cast<int>(bounds_of(s).size()));
  std::snprintf(line, sizeof line, "%-4s %-16s %-10s %-10s %-10s %-10s %-9s %-*s %s\n", "step", "name", "max|d|",
                "mean|d|", "PEIR", "cosine", "agree", width, "threshold", "result");
  o << line;
  for (const StepResult& s : r.steps) {
    auto get = [&](const char* m) {
      const auto v = s.metric(m);
      return v ? fmt(*v) : std::string("-");
    };
    std::string agree = "-";
    if (auto v = s.metric("argmax")) agree = fmt(*v);
    if (auto v = s.metric("token_agreement")) agree = fmt(*v);
    if (auto v = s.metric("mismatches")) agree = fmt(*v) + " diff";
    if (auto v = s.metric("mask_mismatches")) agree = fmt(*v) + " diff";
    const std::string bounds = bounds_of(s);
    std::string max_abs = get("max_abs");
    if (s.step == 5) max_abs = get("rope_max_abs");
    if (s.step == 1) max_abs = get("pixel_max_abs");
    std::snprintf(line, sizeof line, "%-4d %-16s %-10s %-10s %-10s %-10s %-9s %-*s %s\n", s.step, s.name.c_str(),
                  max_abs.c_str(), get("mean_abs").c_str(), get("peir").c_str(), get("cosine").c_str(), agree.c_str(),
                  width, bounds.c_str(), s.status == "n/a" ? "n/a" : (s.pass() ? "PASS" : "FAIL"));
    o << line;
    for (const std::string& f : s.failed) o << "       " << f << "\n";
  }
  if (r.first_divergent_layer) {
    // Name the layer with its number, and the step whose table named it.
    for (const StepResult& s : r.steps) {
      if (s.first_divergent_layer != r.first_divergent_layer || (s.step != 6 && s.step != 7)) continue;
      const LayerRow& row = s.layers[*s.first_divergent_layer];
      double bound = kNaN;
      for (const Bound& b : s.bounds) {
        if (b.metric == "layer_rel_l2") bound = b.value;
      }
      o << "first divergent decoder layer: " << row.layer << " (" << s.name << ": rel_l2 " << fmt(row.metrics.rel_l2)
        << ", expected layer_rel_l2<=" << fmt(bound) << "; the layers before it are within)\n";
      break;
    }
  }
  for (const StepResult& s : r.steps) {
    // Where the error grows most, when a layer table has failed somewhere.
    if (!s.largest_increase_layer || s.pass()) continue;
    const LayerRow& row = s.layers[*s.largest_increase_layer];
    o << s.name << ": layer " << row.layer << " adds the most error (rel_l2 +" << fmt(row.added) << " to "
      << fmt(row.metrics.rel_l2) << ")\n";
  }
  o << (r.pass() ? "All checks passed." : "Mismatches detected.") << "\n";
  return o.str();
}

nlohmann::ordered_json report_json(const Report& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
  nlohmann::ordered_json j;
  j["pass"] = r.pass();
  j["model"] = r.model;
  j["reference"] = r.reference;
  j["tolerance"] = tolerance_class_name(r.tolerance);
  j["steps"] = nlohmann::ordered_json::array();
  for (const StepResult& s : r.steps) {
    nlohmann::ordered_json e;
    e["step"] = s.step;
    e["name"] = s.name;
    e["pass"] = s.pass();
    e["status"] = s.status;
    e["tensor"] = s.tensor;
    e["metrics"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : s.metrics) e["metrics"][k] = num(v);
    e["thresholds"] = nlohmann::ordered_json::object();
    for (const Bound& b : s.bounds) e["thresholds"][b.metric] = std::string(b.lower ? ">=" : "<=") + fmt(b.value);
    e["failed"] = s.failed;
    if (!s.note.empty()) e["note"] = s.note;
    if (!s.layers.empty()) {
      e["layers"] = nlohmann::ordered_json::array();
      for (const LayerRow& l : s.layers) {
        auto row = metrics_json(l.metrics);
        row["layer"] = l.layer;
        row["added"] = num(l.added);
        row["pass"] = l.pass;
        e["layers"].push_back(row);
      }
      e["first_divergent_layer"] = s.first_divergent_layer ? nlohmann::ordered_json(*s.first_divergent_layer)
                                                           : nlohmann::ordered_json(nullptr);
      e["largest_increase_layer"] = s.largest_increase_layer ? nlohmann::ordered_json(*s.largest_increase_layer)
                                                             : nlohmann::ordered_json(nullptr);
    }
    if (!s.details.is_null()) e["details"] = s.details;
    j["steps"].push_back(e);
  }
  j["first_divergent_layer"] =
      r.first_divergent_layer ? nlohmann::ordered_json(*r.first_divergent_layer) : nlohmann::ordered_json(nullptr);
  return j;
}

}  // namespace staticlm::inspect
