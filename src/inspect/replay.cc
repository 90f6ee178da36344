#include "inspect/replay.h"

#include <cmath>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/error.h"
#include "base/file.h"

namespace staticlm::inspect {
namespace {

using nlohmann::json;

std::vector<RecordedTensor> tensors_from_json(const json& j, const std::string& where) {
  if (!j.is_array()) invalid_file(where + ": not an array");
  std::vector<RecordedTensor> out;
  for (const json& t : j) {
    if (!t.is_object() || !t.contains("name") || !t.at("name").is_string() || !t.contains("dtype") ||
        !t.at("dtype").is_string() || !t.contains("shape") || !t.at("shape").is_array()) {
      invalid_file(where + ": each tensor needs a string name, a string dtype and a shape array");
    }
    RecordedTensor r;
    r.name = t.at("name").get<std::string>();
    const auto dt = dtype_from_name(t.at("dtype").get<std::string>());
    if (!dt) invalid_file(where + ": tensor " + r.name + ": unknown dtype " + t.at("dtype").dump());
    r.dtype = *dt;
    std::vector<std::int64_t> dims;
    for (const json& d : t.at("shape")) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) {
        invalid_file(where + ": tensor " + r.name + ": shape holds " + d.dump() + ", not a non-negative integer");
      }
      dims.push_back(d.get<std::int64_t>());
    }
    r.shape = Shape(std::move(dims));
    out.push_back(std::move(r));
  }
  return out;
}

// "[1, 1..64, 8]": the spec's shape, with the dynamic axis as its range.
std::string expected_shape(const TensorSpec& spec, std::int64_t dynamic) {
  if (spec.dynamic_axis < 0) return spec.shape.to_string();
  std::string s = "[";
  for (int a = 0; a < spec.shape.rank(); ++a) {
    if (a > 0) s += ", ";
    if (a != spec.dynamic_axis) {
      s += std::to_string(spec.shape[a]);
    } else if (dynamic > 0) {
      s += std::to_string(dynamic);  // fixed by an earlier tensor of the call
    } else {
      s += "1.." + std::to_string(spec.shape[a]);
    }
  }
  return s + "]";
}

void check_tensor(const SafetensorsFile& f, const std::string& key, const TensorSpec& spec, std::int64_t& dynamic) {
  if (!f.contains(key)) invalid_file(f.path() + ": missing tensor " + key);
  const TensorView v = f.get(key);
  const std::string where = f.path() + ": tensor " + key;
  if (v.dtype != spec.dtype) {
    invalid_file(where + ": dtype " + dtype_name(v.dtype) + ", expected " + dtype_name(spec.dtype));
  }
  bool ok = v.shape.rank() == spec.shape.rank();
  std::int64_t extent = -1;
  for (int a = 0; ok && a < v.shape.rank(); ++a) {
    if (a == spec.dynamic_axis) {
      extent = v.shape[a];
      ok = extent >= 1 && extent <= spec.shape[a] && (dynamic < 0 || extent == dynamic);
    } else {
      ok = v.shape[a] == spec.shape[a];
    }
  }
  if (!ok) invalid_file(where + ": shape " + v.shape.to_string() + ", expected " + expected_shape(spec, dynamic));
  if (extent > 0) dynamic = extent;
}

}  // namespace

Recording read_recording(const std::string& dir) {
  const std::string path = path_join(dir, kRecordIndex);
  if (!file_exists(path)) invalid_file(path + ": missing (not a recording, or one that did not finish)");
  const std::string text = read_file(path);
  check_json_limits(text, path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    invalid_file(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) invalid_file(path + ": not a JSON object");
  if (!j.contains("format") || j.at("format") != kRecordFormat) {
    invalid_file(path + ": format " + (j.contains("format") ? j.at("format").dump() : std::string("missing")) +
                 ", expected \"" + kRecordFormat + "\"");
  }
  if (!j.contains("version") || j.at("version") != kRecordVersion) {
    invalid_file(path + ": version " + (j.contains("version") ? j.at("version").dump() : std::string("missing")) +
                 ", this staticlm reads version " + std::to_string(kRecordVersion));
  }
  Recording r;
  r.dir = dir;
  if (!j.contains("setup")) invalid_file(path + ": missing field \"setup\"");
  r.setup = setup_from_json(j.at("setup"), path);
  if (!j.contains("calls") || !j.at("calls").is_array()) invalid_file(path + ": \"calls\" is missing or not an array");
  std::set<std::int64_t> seen;
  for (const json& c : j.at("calls")) {
    const std::string where = path + ": calls[" + std::to_string(r.calls.size()) + "]";
    if (!c.is_object() || !c.contains("index") || !c.at("index").is_number_integer() || !c.contains("graph") ||
        !c.at("graph").is_string() || !c.contains("file") || !c.at("file").is_string()) {
      invalid_file(where + ": needs an integer index, a string graph and a string file");
    }
    RecordedCallEntry e;
    e.index = c.at("index").get<std::int64_t>();
    e.graph = c.at("graph").get<std::string>();
    e.file = c.at("file").get<std::string>();
    if (e.file.empty() || e.file.find('/') != std::string::npos || e.file == "." || e.file == "..") {
      invalid_file(where + ": file \"" + e.file + "\" is not a plain file name in the recording directory");
    }
    if (!seen.insert(e.index).second) invalid_file(where + ": call index " + std::to_string(e.index) + " repeats");
    if (c.contains("inputs")) e.inputs = tensors_from_json(c.at("inputs"), where + ".inputs");
    if (c.contains("outputs")) e.outputs = tensors_from_json(c.at("outputs"), where + ".outputs");
    r.calls.push_back(std::move(e));
  }
  return r;
}

std::vector<RecordedCallEntry> select_calls(const Recording& recording, const Backend& backend,
                                            const std::optional<std::string>& graph) {
  if (graph) {
    bool known = false;
    for (const SubgraphSignature& s : backend.signatures()) known = known || graph_matches(s.name, *graph);
    if (!known) {
      std::string names;
      for (const SubgraphSignature& s : backend.signatures()) names += (names.empty() ? "" : ", ") + s.name;
      invalid_argument("--graph " + *graph + ": no subgraph of the " + backend.name() +
                       " backend has that name or prefix (it has " + names + ")");
    }
  }
  if (recording.calls.empty()) {
    invalid_file(path_join(recording.dir, kRecordIndex) + ": no calls (every run records at least one)");
  }
  std::vector<RecordedCallEntry> out;
  for (const RecordedCallEntry& c : recording.calls) {
    if (!backend.has(c.graph)) {
      invalid_file(path_join(recording.dir, kRecordIndex) + ": call " + std::to_string(c.index) + " runs graph " +
                   c.graph + ", which the " + backend.name() + " backend for this model and profile does not have");
    }
    if (!graph || graph_matches(c.graph, *graph)) out.push_back(c);
  }
  if (graph && out.empty()) {
    invalid_argument("--graph " + *graph + ": the recording " + recording.dir + " has no call of that graph");
  }
  return out;
}

std::unique_ptr<SafetensorsFile> open_call_file(const std::string& path, const SubgraphSignature& sig) {
  if (!file_exists(path)) invalid_file(path + ": missing (listed in the recording's index.json)");
  auto f = SafetensorsFile::open(path);
  std::int64_t dynamic = -1;
  std::set<std::string> expected;
  for (const TensorSpec& s : sig.inputs) {
    check_tensor(*f, "in." + s.name, s, dynamic);
    expected.insert("in." + s.name);
  }
  for (const TensorSpec& s : sig.outputs) {
    check_tensor(*f, "out." + s.name, s, dynamic);
    expected.insert("out." + s.name);
  }
  for (const std::string& n : f->names()) {
    if (!expected.count(n)) invalid_file(path + ": tensor " + n + " is not an input or output of " + sig.name);
  }
  return f;
}

CallReplay replay_call(Backend& backend, const RecordedCallEntry& call, const SafetensorsFile& f) {
  const SubgraphSignature& sig = backend.signature(call.graph);
  // Copies: the file's bytes need not be aligned for the kernels' element types.
  std::vector<Tensor> inputs, outputs;
  std::vector<TensorView> in_views;
  std::vector<TensorBuffer> out_buffers;
  for (const TensorSpec& s : sig.inputs) inputs.push_back(Tensor::copy_of(f.get("in." + s.name)));
  for (const Tensor& t : inputs) in_views.push_back(t.view());
  for (const TensorSpec& s : sig.outputs) {
    const TensorView rec = f.get("out." + s.name);
    outputs.emplace_back(rec.dtype, rec.shape);  // zero-filled
  }
  for (Tensor& t : outputs) out_buffers.push_back({t.dtype(), t.shape(), t.data()});
  try {
    backend.run(call.graph, in_views, out_buffers);
  } catch (const Error& e) {
    // Values the graph refuses (a token id outside the vocabulary) are found only as it runs:
    // the message names the call's file.
    throw Error(e.kind(), f.path() + ": " + e.what());
  }

  CallReplay r{call.index, call.graph, call.file, {}};
  for (std::size_t i = 0; i < sig.outputs.size(); ++i) {
    r.outputs.push_back(compare_output(sig.outputs[i].name, outputs[i].view(), f.get("out." + sig.outputs[i].name)));
  }
  return r;
}

OutputComparison compare_output(const std::string& name, const TensorView& got, const TensorView& rec) {
  OutputComparison o;
  o.name = name;
  o.bit_exact = got.nbytes() == rec.nbytes() && std::memcmp(got.data, rec.data, rec.nbytes()) == 0;
  std::vector<float> a(static_cast<std::size_t>(got.numel())), b(a.size());
  if (rec.dtype != DType::kI4 && rec.dtype != DType::kU4) {
    for (std::int64_t k = 0; k < got.numel(); ++k) {
      a[static_cast<std::size_t>(k)] = got.get_f32(k);
      b[static_cast<std::size_t>(k)] = rec.get_f32(k);
    }
    o.metrics = compare(a, b);
  } else {  // packed 4-bit outputs: no element-wise metrics, bits only
    o.metrics.count = got.numel();
    o.metrics.max_abs = o.metrics.mean_abs = o.metrics.peir = o.metrics.rel_l2 = o.bit_exact ? 0.0 : NAN;
    o.metrics.cosine = o.bit_exact ? 1.0 : NAN;
  }
  return o;
}

bool output_passes(const OutputComparison& o, std::optional<double> max_peir) {
  if (o.bit_exact) return true;
  return max_peir && o.metrics.finite() && o.metrics.peir <= *max_peir;
}

json replay_report_json(const Recording& recording, const std::string& model_dir, const std::string& backend,
                        const std::string& kernel_target, const std::vector<CallReplay>& results,
                        std::optional<double> max_peir) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  json calls = json::array();
  std::int64_t outputs = 0, exact = 0, passed = 0;
  for (const CallReplay& c : results) {
    json outs = json::array();
    for (const OutputComparison& o : c.outputs) {
      const bool pass = output_passes(o, max_peir);
      ++outputs;
      exact += o.bit_exact ? 1 : 0;
      passed += pass ? 1 : 0;
      outs.push_back({{"name", o.name},
                      {"count", o.metrics.count},
                      {"max_abs", num(o.metrics.max_abs)},
                      {"mean_abs", num(o.metrics.mean_abs)},
                      {"peir", num(o.metrics.peir)},
                      {"cosine", num(o.metrics.cosine)},
                      {"rel_l2", num(o.metrics.rel_l2)},
                      {"bit_exact", o.bit_exact},
                      {"pass", pass}});
    }
    calls.push_back({{"index", c.index}, {"graph", c.graph}, {"file", c.file}, {"outputs", outs}});
  }
  return {{"record", recording.dir},
          {"model_dir", model_dir},
          {"backend", backend},
          {"kernel_target", kernel_target},
          {"tolerance", max_peir ? json({{"max_peir", *max_peir}}) : json("bit-exact")},
          {"calls", calls},
          {"summary",
           {{"calls", static_cast<std::int64_t>(results.size())},
            {"outputs", outputs},
            {"bit_exact", exact},
            {"passed", passed},
            {"failed", outputs - passed},
            {"pass", passed == outputs}}}};
}

}  // namespace staticlm::inspect
