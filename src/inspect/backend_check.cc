#include "inspect/backend_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "backends/subgraph_contract.h"
#include "base/error.h"
#include "base/file.h"

namespace staticlm::inspect {

namespace {

using json = nlohmann::json;

// Byte patterns written into output buffers before a call: a NaN payload no graph computes.
constexpr std::uint32_t kUnwritten = 0x7FA5A5A5u, kAfterReturn = 0x7FB4B4B4u;

void fill(Tensor& t, std::uint32_t word) {
  auto* p = static_cast<std::uint8_t*>(t.data());
  for (std::size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<std::uint8_t>(word >> (8 * (i % 4)));
}

// Elements of t that still hold the pattern fill(t, word) wrote.
std::int64_t count_pattern(const Tensor& t, std::uint32_t word) {
  Tensor pattern(t.dtype(), t.shape());
  fill(pattern, word);
  const std::size_t e = t.numel() > 0 ? t.nbytes() / static_cast<std::size_t>(t.numel()) : 0;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const std::size_t at = static_cast<std::size_t>(i) * e;
    n += std::memcmp(static_cast<const std::uint8_t*>(t.data()) + at, static_cast<const std::uint8_t*>(pattern.data()) + at,
                     e) == 0;
  }
  return n;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::optional<double> metric(const DiffMetrics& m, const std::string& name) {
  if (name == "peir") return m.peir;
  if (name == "cosine") return m.cosine;
  if (name == "max_abs") return m.max_abs;
  if (name == "mean_abs") return m.mean_abs;
  if (name == "rel_l2") return m.rel_l2;
  return std::nullopt;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// One run of the call on fresh buffers: inputs copied, outputs filled with `word`.
struct Run {
  std::vector<Tensor> inputs, outputs;
};

Run run_once(Backend& candidate, const CheckCall& call, std::uint32_t word) {
  Run r;
  std::vector<TensorView> in;
  std::vector<TensorBuffer> out;
  for (const Tensor& t : call.inputs) r.inputs.push_back(Tensor::copy_of(t.view()));
  for (const Tensor& t : call.outputs) fill(r.outputs.emplace_back(t.dtype(), t.shape()), word);
  for (const Tensor& t : r.inputs) in.push_back(t.view());
  for (Tensor& t : r.outputs) out.push_back({t.dtype(), t.shape(), t.data()});
  candidate.run(call.graph, in, out);
  return r;
}

}  // namespace

ObservedBackend::Observer FirstCallSampler::observer() {
  return [this](const SubgraphCall& c) {
    if (!seen_.emplace(c.signature.name, true).second) return;
    CheckCall k{c.index, c.signature.name, {}, {}};
    for (const TensorView& v : c.inputs) k.inputs.push_back(Tensor::copy_of(v));
    for (const TensorBuffer& b : c.outputs) k.outputs.push_back(Tensor::copy_of(b.view()));
    calls_.push_back(std::move(k));
  };
}

std::vector<CheckCall> first_recorded_calls(const Recording& recording, const Backend& backend) {
  std::vector<CheckCall> calls;
  std::map<std::string, bool> seen;
  for (const RecordedCallEntry& e : recording.calls) {
    const SubgraphSignature* sig = backend.find(e.graph);
    if (sig == nullptr || !seen.emplace(e.graph, true).second) continue;
    const auto file = open_call_file(path_join(recording.dir, e.file), *sig);
    CheckCall k{e.index, e.graph, {}, {}};
    for (const TensorSpec& s : sig->inputs) k.inputs.push_back(Tensor::copy_of(file->get("in." + s.name)));
    for (const TensorSpec& s : sig->outputs) k.outputs.push_back(Tensor::copy_of(file->get("out." + s.name)));
    calls.push_back(std::move(k));
  }
  return calls;
}

void recompute_reference(Backend& reference, std::vector<CheckCall>& calls) {
  for (CheckCall& c : calls) {
    std::vector<TensorView> in;
    std::vector<TensorBuffer> out;
    for (const Tensor& t : c.inputs) in.push_back(t.view());
    for (Tensor& t : c.outputs) out.push_back({t.dtype(), t.shape(), t.data()});
    reference.run(c.graph, in, out);
  }
}

std::vector<Bound> output_bounds(const std::string& graph, DType dtype, ToleranceClass tolerance) {
  if (!is_float(dtype)) return {};
  const Thresholds t = default_thresholds(tolerance);
  auto upper = [&t](int step, const char* metric, const char* as) { return Bound{as, *t.value(step, metric), false}; };
  auto lower = [&t](int step, const char* metric) { return Bound{metric, *t.value(step, metric), true}; };
  if (graph == kTokenEmbedding) return {upper(2, "peir", "peir")};
  if (graph == kPleEmbedding || graph == kPleProjection) return {upper(2, "ple_peir", "peir")};
  if (graph == kVisionPrefill) return {upper(3, "peir", "peir"), lower(3, "cosine")};
  if (graph == kMultimodalFusion) return {upper(4, "peir", "peir"), lower(4, "cosine")};
  if (graph == kLmHead) return {upper(6, "peir", "peir"), lower(6, "cosine")};
  if (starts_with(graph, "decoder_layer_decode_")) return {upper(7, "layer_rel_l2", "rel_l2")};
  return {upper(6, "layer_rel_l2", "rel_l2")};  // prefill and append layers
}

GraphCheck check_call(Backend& candidate, const CheckCall& call, ToleranceClass tolerance) {
  GraphCheck g{call.index, call.graph, {}, {}};
  const SubgraphSignature& sig = candidate.signature(call.graph);
  Run first;
  try {
    first = run_once(candidate, call, kUnwritten);
  } catch (const Error& e) {
    g.failures.push_back(std::string("run failed: ") + e.what());
    return g;
  }
  for (std::size_t i = 0; i < first.inputs.size(); ++i) {
    if (!same_bytes(first.inputs[i], call.inputs[i])) g.failures.push_back("input " + sig.inputs[i].name + " was modified");
  }
  std::vector<Tensor> result;
  for (std::size_t i = 0; i < first.outputs.size(); ++i) {
    const std::int64_t unwritten = count_pattern(first.outputs[i], kUnwritten);
    if (unwritten > 0) {
      g.failures.push_back("output " + sig.outputs[i].name + ": " + std::to_string(unwritten) + " of " +
                           std::to_string(first.outputs[i].numel()) + " elements not written");
    }
    result.push_back(Tensor::copy_of(first.outputs[i].view()));
    fill(first.outputs[i], kAfterReturn);
  }
  // A plug-in that keeps writing (its threads still running) or keeps the buffers is caught
  // here: nothing may change them after run() returned, and the repeat call below runs on new
  // buffers while these hold stale bytes.
  for (Tensor& t : first.inputs) fill(t, kAfterReturn);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  for (std::size_t i = 0; i < first.outputs.size(); ++i) {
    if (count_pattern(first.outputs[i], kAfterReturn) != first.outputs[i].numel()) {
      g.failures.push_back("output " + sig.outputs[i].name + " was written after run() returned");
    }
  }
  Run second;
  try {
    second = run_once(candidate, call, kAfterReturn);
  } catch (const Error& e) {
    g.failures.push_back(std::string("repeat call failed: ") + e.what());
    return g;
  }
  for (std::size_t i = 0; i < result.size(); ++i) {
    if (!same_bytes(second.outputs[i], result[i])) {
      const OutputComparison d = compare_output(sig.outputs[i].name, second.outputs[i].view(), result[i].view());
      g.failures.push_back("output " + sig.outputs[i].name + ": a repeat call on new buffers differs (max |d| " +
                           number(d.metrics.max_abs) + ")");
    }
  }
  for (std::size_t i = 0; i < result.size(); ++i) {
    OutputComparison o = compare_output(sig.outputs[i].name, result[i].view(), call.outputs[i].view());
    if (!o.bit_exact) {
      const std::vector<Bound> bounds = output_bounds(call.graph, result[i].dtype(), tolerance);
      if (bounds.empty()) g.failures.push_back("output " + o.name + ": differs from the reference (must be bit-exact)");
      for (const Bound& b : bounds) {
        const double v = *metric(o.metrics, b.metric);
        if (!o.metrics.finite() || !b.holds(v)) {
          g.failures.push_back("output " + o.name + ": " + b.metric + " " + number(v) + ", expected " + b.describe());
        }
      }
    }
    g.outputs.push_back(std::move(o));
  }
  return g;
}

bool BackendCheck::pass() const {
  for (const GraphCheck& g : graphs) {
    if (!g.pass()) return false;
  }
  return !graphs.empty();
}

json backend_check_json(const BackendCheck& c) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json graphs = json::array();
  for (const GraphCheck& g : c.graphs) {
    json outputs = json::array();
    for (const OutputComparison& o : g.outputs) {
      outputs.push_back({{"name", o.name}, {"count", o.metrics.count}, {"max_abs", num(o.metrics.max_abs)},
                         {"mean_abs", num(o.metrics.mean_abs)}, {"peir", num(o.metrics.peir)},
                         {"cosine", num(o.metrics.cosine)}, {"rel_l2", num(o.metrics.rel_l2)},
                         {"bit_exact", o.bit_exact}});
    }
    graphs.push_back({{"index", g.index}, {"graph", g.graph}, {"pass", g.pass()}, {"failures", g.failures},
                      {"outputs", outputs}});
  }
  return {{"backend", c.backend},
          {"model_dir", c.model_dir},
          {"source", c.source},
          {"tolerance", tolerance_class_name(c.tolerance)},
          {"graphs", graphs},
          {"not_exercised", c.not_exercised},
          {"not_provided", c.not_provided},
          {"pass", c.pass()}};
}

std::string format_backend_check(const BackendCheck& c) {
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "%-32s %-24s %10s %10s %10s  %s\n", "graph", "output", "max|d|", "peir", "cosine",
                "result");
  s += line;
  std::int64_t failed = 0;
  for (const GraphCheck& g : c.graphs) {
    failed += !g.pass();
    for (const OutputComparison& o : g.outputs) {
      std::snprintf(line, sizeof line, "%-32s %-24s %10.3g %10.3g %10.6f  %s\n", g.graph.c_str(), o.name.c_str(),
                    o.metrics.max_abs, o.metrics.peir, o.metrics.cosine,
                    !g.pass() ? "FAIL" : (o.bit_exact ? "ok (bit-exact)" : "ok"));
      s += line;
    }
  }
  for (const GraphCheck& g : c.graphs) {
    for (const std::string& f : g.failures) s += "FAIL " + g.graph + ": " + f + "\n";
  }
  if (!c.not_exercised.empty()) {
    s += "not exercised (no call of them in the " + c.source + "):";
    for (const std::string& n : c.not_exercised) s += " " + n;
    s += "\n";
  }
  s += "backend-check " + c.backend + ": " + std::to_string(c.graphs.size()) + " graphs checked, " +
       std::to_string(failed) + " failed, " + std::to_string(c.not_provided.size()) + " not provided: " +
       (c.pass() ? "PASS" : "FAIL") + "\n";
  return s;
}

}  // namespace staticlm::inspect
