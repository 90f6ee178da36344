#include "inspect/recorder.h"

#include <cstdio>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/dispatch.h"
#include "base/error.h"
#include "base/file.h"
#include "tensor/safetensors.h"

namespace staticlm::inspect {
namespace {

using nlohmann::json;

// A field of a JSON object with the expected type; kInvalidFile naming where and the key otherwise.
template <typename T>
T field(const json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) invalid_file(where + ": missing field \"" + key + "\"");
  const json& v = j.at(key);
  bool ok = false;
  if constexpr (std::is_same_v<T, bool>) {
    ok = v.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    ok = v.is_number_integer();
  } else {
    ok = v.is_string();
  }
  if (!ok) invalid_file(where + ": field \"" + key + "\" has the wrong type (" + v.type_name() + ")");
  return v.get<T>();
}

json tensors_json(const std::vector<RecordedTensor>& tensors) {
  json a = json::array();
  for (const RecordedTensor& t : tensors) a.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape.dims()}});
  return a;
}

}  // namespace

RecordSetup record_setup(const std::string& model_dir, const Backend& backend, const CpuBackendOptions& options) {
  RecordSetup s;
  s.model_dir = model_dir;
  s.backend = backend.name();
  s.profile = backend.profile();
  s.bf16_activations = options.bf16_activations;
  s.skip_padded_rows = options.skip_padded_rows;
  return s;
}

json setup_to_json(const RecordSetup& s) {
  const SubgraphProfile& p = s.profile;
  json profile = {{"max_seq", p.max_seq},
                  {"rope_sine", p.rope_sine == RopeSine::kHf ? "hf" : "pre_negated_sin"},
                  {"visual_start_idx", p.visual_start_idx ? json(*p.visual_start_idx) : json(nullptr)},
                  {"num_visual_tokens", p.num_visual_tokens},
                  {"num_patches", p.num_patches},
                  {"patch_vector_size", p.patch_vector_size},
                  {"patch_grid_height", p.patch_grid_height},
                  {"patch_grid_width", p.patch_grid_width}};
  return {{"model_dir", s.model_dir},
          {"backend", s.backend},
          {"profile", profile},
          {"cpu",
           {{"bf16_activations", s.bf16_activations},
            {"skip_padded_rows", s.skip_padded_rows},
            {"kernel_target", s.kernel_target}}}};
}

RecordSetup setup_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) invalid_file(where + ": \"setup\" is not an object");
  RecordSetup s;
  s.model_dir = field<std::string>(j, "model_dir", where + ": setup");
  s.backend = field<std::string>(j, "backend", where + ": setup");
  const std::string pw = where + ": setup.profile";
  if (!j.contains("profile") || !j.at("profile").is_object()) invalid_file(pw + ": missing or not an object");
  const json& p = j.at("profile");
  SubgraphProfile& q = s.profile;
  q.max_seq = field<std::int64_t>(p, "max_seq", pw);
  const std::string rope = field<std::string>(p, "rope_sine", pw);
  if (rope != "hf" && rope != "pre_negated_sin") {
    invalid_file(pw + ": rope_sine \"" + rope + "\", expected \"hf\" or \"pre_negated_sin\"");
  }
  q.rope_sine = rope == "hf" ? RopeSine::kHf : RopeSine::kPreNegatedSin;
  if (!p.contains("visual_start_idx")) invalid_file(pw + ": missing field \"visual_start_idx\"");
  if (!p.at("visual_start_idx").is_null()) q.visual_start_idx = field<std::int64_t>(p, "visual_start_idx", pw);
  q.num_visual_tokens = field<std::int64_t>(p, "num_visual_tokens", pw);
  q.num_patches = field<std::int64_t>(p, "num_patches", pw);
  q.patch_vector_size = field<std::int64_t>(p, "patch_vector_size", pw);
  q.patch_grid_height = field<std::int64_t>(p, "patch_grid_height", pw);
  q.patch_grid_width = field<std::int64_t>(p, "patch_grid_width", pw);
  // What run could have recorded (its --max-seq range; the image span and grid inside the
  // sequence and the patches): checked before a backend sized by these numbers is made.
  if (q.max_seq < 1 || q.max_seq > (std::int64_t{1} << 31)) {
    invalid_file(pw + ": max_seq " + std::to_string(q.max_seq) + ", expected 1 to 2147483648");
  }
  for (const auto& [name, v] : {std::pair{"num_visual_tokens", q.num_visual_tokens}, {"num_patches", q.num_patches},
                                {"patch_vector_size", q.patch_vector_size}, {"patch_grid_height", q.patch_grid_height},
                                {"patch_grid_width", q.patch_grid_width}}) {
    if (v < 0 || v > (std::int64_t{1} << 31)) {
      invalid_file(pw + ": " + name + " " + std::to_string(v) + ", expected 0 to 2147483648");
    }
  }
  if (q.patch_grid_height * q.patch_grid_width > q.num_patches) {
    invalid_file(pw + ": a patch grid of " + std::to_string(q.patch_grid_height) + " x " + std::to_string(q.patch_grid_width) +
                 " does not fit in num_patches " + std::to_string(q.num_patches));
  }
  if (q.visual_start_idx && (*q.visual_start_idx < 0 || *q.visual_start_idx + q.num_visual_tokens > q.max_seq)) {
    invalid_file(pw + ": the image span [" + std::to_string(*q.visual_start_idx) + ", " +
                 std::to_string(*q.visual_start_idx + q.num_visual_tokens) + ") is not inside max_seq " + std::to_string(q.max_seq));
  }
  const std::string cw = where + ": setup.cpu";
  if (!j.contains("cpu") || !j.at("cpu").is_object()) invalid_file(cw + ": missing or not an object");
  const json& c = j.at("cpu");
  s.bf16_activations = field<bool>(c, "bf16_activations", cw);
  s.skip_padded_rows = field<bool>(c, "skip_padded_rows", cw);
  s.kernel_target = field<std::string>(c, "kernel_target", cw);
  return s;
}

bool graph_matches(const std::string& graph, const std::string& pattern) {
  if (graph == pattern) return true;
  return !pattern.empty() && graph.size() > pattern.size() && graph.compare(0, pattern.size(), pattern) == 0 &&
         graph[pattern.size()] == '_';
}

std::string call_file_name(std::int64_t index, const std::string& graph) {
  char num[32];
  std::snprintf(num, sizeof num, "%06lld", static_cast<long long>(index));
  return std::string(num) + "_" + graph + ".safetensors";
}

void Recorder::check_dir(const std::string& dir) {
  std::error_code ec;
  check_output_dir(dir, "--record");
  if (std::filesystem::exists(dir, ec) && (!std::filesystem::is_empty(dir, ec) || ec)) {
    invalid_argument("--record " + dir + ": the directory exists and is not empty; record into a new or empty one");
  }
}

Recorder::Recorder(const std::string& dir, RecordSetup setup) : dir_(dir), setup_(std::move(setup)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check_dir(dir);
  if (!fs::exists(dir, ec)) {  // an existing one is empty: recorded into as it is
    if (!fs::create_directories(dir, ec) || ec) {
      invalid_argument("--record " + dir + ": cannot create the directory (" + ec.message() + ")");
    }
    created_dir_ = true;
  }
  if (!setup_.model_dir.empty()) setup_.model_dir = fs::absolute(setup_.model_dir, ec).lexically_normal().string();
  if (setup_.kernel_target.empty()) setup_.kernel_target = cpu::kernel_target();
}

Recorder::~Recorder() {
  if (finished_) return;
  std::error_code ec;
  for (const RecordedCallEntry& c : calls_) std::filesystem::remove(path_join(dir_, c.file), ec);
  if (created_dir_) std::filesystem::remove(dir_, ec);  // only when empty: nothing else is lost
}

ObservedBackend::Observer Recorder::observer() {
  return [this](const SubgraphCall& call) { record(call); };
}

void Recorder::record(const SubgraphCall& call) {
  const SubgraphSignature& sig = call.signature;
  if (!patterns_.empty()) {
    bool wanted = false;
    for (const std::string& p : patterns_) wanted = wanted || graph_matches(sig.name, p);
    if (!wanted) return;
  }
  if (call.inputs.size() != sig.inputs.size() || call.outputs.size() != sig.outputs.size()) {
    internal_error("recorder: call " + std::to_string(call.index) + " of " + sig.name +
                   " does not have its signature's tensor counts");
  }
  RecordedCallEntry entry;
  entry.index = call.index;
  entry.graph = sig.name;
  entry.file = call_file_name(call.index, sig.name);
  SafetensorsWriter w;
  // The views are valid for the duration of this call, and write() runs inside it: no copy.
  auto add = [&](const std::string& prefix, const std::string& name, const TensorView& v,
                 std::vector<RecordedTensor>& list) {
    w.add(prefix + name, v.dtype, v.shape, [v](ByteSink& sink) { sink.write(v.data, v.nbytes()); });
    list.push_back({name, v.dtype, v.shape});
    bytes_ += v.nbytes();
  };
  for (std::size_t i = 0; i < sig.inputs.size(); ++i) add("in.", sig.inputs[i].name, call.inputs[i], entry.inputs);
  for (std::size_t i = 0; i < sig.outputs.size(); ++i) {
    add("out.", sig.outputs[i].name, call.outputs[i].view(), entry.outputs);
  }
  w.add_metadata("graph", sig.name);
  w.add_metadata("index", std::to_string(call.index));
  w.write(path_join(dir_, entry.file));
  calls_.push_back(std::move(entry));
}

void Recorder::finish() const {
  // Indented JSON with one line per call, so the index reads (and diffs) call by call.
  std::string text = "{\n \"format\": " + json(kRecordFormat).dump() + ",\n \"version\": " +
                     std::to_string(kRecordVersion) + ",\n \"setup\": " + setup_to_json(setup_).dump() +
                     ",\n \"calls\": [";
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const RecordedCallEntry& c = calls_[i];
    const json call = {{"index", c.index},
                       {"graph", c.graph},
                       {"file", c.file},
                       {"inputs", tensors_json(c.inputs)},
                       {"outputs", tensors_json(c.outputs)}};
    text += (i == 0 ? "\n  " : ",\n  ") + call.dump();
  }
  text += calls_.empty() ? "]\n}\n" : "\n ]\n}\n";
  write_text_atomic(path_join(dir_, kRecordIndex), text);
  finished_ = true;
}

}  // namespace staticlm::inspect
