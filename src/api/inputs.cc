#include "staticlm/inputs.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/guarded.h"
#include "base/error.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
#include "runtime/static_inputs_check.h"
#include "tensor/safetensors.h"
#include "vision/image_decode.h"

namespace staticlm::api {

std::int64_t HostTensor::numel() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

namespace {

// A copy of t; `dtype` names it as NumPy does (the BOOL mask goes out as uint8 0/1, as
// `staticlm inputs` writes it).
HostTensor host(const Tensor& t) {
  HostTensor h;
  switch (t.dtype()) {
    case DType::kF32: h.dtype = "float32"; break;
    case DType::kI64: h.dtype = "int64"; break;
    case DType::kBool:
    case DType::kU8: h.dtype = "uint8"; break;
    default: internal_error("static input of unexpected dtype");
  }
  h.shape = t.shape().dims();
  const TensorView v = t.view();
  const auto* bytes = static_cast<const unsigned char*>(v.data);
  h.data.assign(bytes, bytes + t.nbytes());
  return h;
}

RuntimeConfig config_for(const InputOptions& o) {
  std::optional<std::string> file;
  if (!o.config_file.empty()) file = o.config_file;
  return load_runtime_config(file, o.sets);
}

std::unique_ptr<StaticInputBuilder> builder_for(const std::string& model_dir, const InputOptions& o, bool text_only) {
  return StaticInputBuilder::create(model_dir, config_for(o), o.reserve_decode_slot, text_only);
}

// The tensors `staticlm inputs` writes, by name, in the order it writes them.
template <class F>
void for_each_tensor(const StaticInputs& s, F&& f) {
  f("llm_input_ids", s.llm_input_ids);
  f("attention_mask", s.attention_mask);
  f("valid_length", s.valid_length);
  f("raw_input_ids", s.raw_input_ids);
  if (s.pixel_values) f("pixel_values", *s.pixel_values);
  if (s.image_position_ids) f("image_position_ids", *s.image_position_ids);
}

std::vector<RgbImage> decode_images(const std::vector<std::string>& paths) {
  std::vector<RgbImage> images;
  for (const std::string& path : paths) images.push_back(decode_image_file(path));
  return images;
}

nlohmann::ordered_json summary(const StaticInputBuilder& b, const StaticInputs& s,
                               const std::vector<StaticInputCheck>& checks, bool passed, const std::string& model_dir,
                               ImageFit image_fit) {
  const StaticInputOptions& o = b.options();
  nlohmann::ordered_json j;
  j["model_dir"] = model_dir;
  j["T"] = s.length();
  j["S"] = s.max_seq();
  j["valid_length"] = s.length();
  j["pad_token_id"] = *o.pad_token_id;
  j["image_token_id"] = o.image_token_id ? nlohmann::ordered_json(*o.image_token_id) : nlohmann::ordered_json(nullptr);
  j["vision_profile"] = b.has_vision() ? nlohmann::ordered_json(o.profile.name) : nlohmann::ordered_json(nullptr);
  j["image_fit"] = image_fit_name(image_fit);
  if (s.has_image()) {
    j["span"] = {o.profile.visual_start_idx, o.profile.visual_end_idx()};
    j["num_visual_tokens"] = o.profile.num_visual_tokens;
    j["patch_grid"] = {o.profile.patch_grid_height, o.profile.patch_grid_width};
    j["pixel_values_shape"] = s.pixel_values->shape().dims();
    j["image_position_ids_sha256"] = o.profile.position_ids_sha256();
  } else {
    j["span"] = nullptr;
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const StaticInputCheck& c : checks) list.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  j["checks"] = std::move(list);
  j["all_passed"] = passed;
  j["raw_input_ids_head"] = std::vector<std::int64_t>(
      s.raw_input_ids.as<std::int64_t>().begin(),
      s.raw_input_ids.as<std::int64_t>().begin() + std::min<std::int64_t>(s.length(), 8));
  return j;
}

std::string summary_text(const StaticInputBuilder& b, const StaticInputs& s, const std::vector<StaticInputCheck>& checks) {
  std::string t = "T " + std::to_string(s.length()) + " of S " + std::to_string(s.max_seq());
  if (s.has_image()) {
    const VisionProfile& p = b.options().profile;
    t += ", image span [" + std::to_string(p.visual_start_idx) + ", " + std::to_string(p.visual_end_idx()) +
         ") of profile " + p.name;
  }
  t += "\n";
  for (const StaticInputCheck& c : checks) t += (c.passed ? "  ok    " : "  FAIL  ") + c.name + ": " + c.detail + "\n";
  return t;
}

}  // namespace

std::map<std::string, HostTensor> build_static_inputs(const std::string& model_dir, const std::string& prompt,
                                                      const std::vector<std::string>& images, const InputOptions& o) {
  return guarded([&] {
    // As `staticlm inputs`: a text-only prompt is not checked against the image span.
    const auto builder = builder_for(model_dir, o, /*text_only=*/images.empty());
    const StaticInputs s = builder->build(prompt, decode_images(images));
    std::map<std::string, HostTensor> out;
    for_each_tensor(s, [&out](const std::string& name, const Tensor& t) { out[name] = host(t); });
    return out;
  });
}

std::map<std::string, HostTensor> preprocess_image(const std::string& model_dir, const std::string& image,
                                                   const InputOptions& o) {
  return guarded([&] {
    const auto builder = builder_for(model_dir, o, /*text_only=*/false);
    if (!builder->has_vision()) invalid_argument("preprocess_image needs a model with a vision tower; " + model_dir + " is text-only");
    // The processor's output for the image alone: the same pixels any prompt with it gets.
    const ProcessorBatch b = builder->process("<|image|>", decode_images({image}));
    if (!b.pixel_values || !b.image_position_ids) internal_error("the processor returned no image tensors");
    return std::map<std::string, HostTensor>{{"pixel_values", host(*b.pixel_values)},
                                             {"image_position_ids", host(*b.image_position_ids)}};
  });
}

StaticInputsReport check_static_inputs(const std::string& model_dir, const std::string& prompt,
                                       const std::vector<std::string>& images, const InputOptions& o) {
  return guarded([&] {
    const RuntimeConfig config = config_for(o);
    // A text-only prompt is not checked against the image span (a multimodal checkpoint's
    // profile need not fit max_seq then).
    const auto builder = StaticInputBuilder::create(model_dir, config, o.reserve_decode_slot, images.empty());
    const std::vector<RgbImage> decoded = decode_images(images);
    const StaticInputs inputs = builder->build(prompt, decoded);
    // Step 1: re-run the processor and re-derive every output independently.
    const ProcessorBatch reference = builder->process(prompt, decoded);
    const StaticInputOptions& io = builder->options();
    StaticInputsReport r;
    for_each_tensor(inputs, [&r](const std::string& name, const Tensor& t) { r.tensors[name] = host(t); });
    if (builder->has_vision()) r.vision_profile = io.profile.name;
    for (const InputCheck& c : staticlm::check_static_inputs(inputs, reference, inputs.max_seq(), *io.pad_token_id,
                                                             io.image_token_id)) {
      r.checks.push_back({c.name, c.passed, c.detail});
    }
    r.all_passed = std::all_of(r.checks.begin(), r.checks.end(), [](const StaticInputCheck& c) { return c.passed; });
    r.summary_json = summary(*builder, inputs, r.checks, r.all_passed, model_dir, config.image_fit).dump(2);
    r.summary_text = summary_text(*builder, inputs, r.checks);
    return r;
  });
}

void save_static_inputs(const StaticInputsReport& report, const std::string& path) {
  guarded([&] {
    const auto ids = report.tensors.find("llm_input_ids");
    if (ids == report.tensors.end() || ids->second.shape.size() != 2) {
      invalid_argument("save_static_inputs: the report has no llm_input_ids [1, S]");
    }
    SafetensorsWriter w;
    for (const auto& [name, t] : report.tensors) {
      const DType dtype = t.dtype == "float32" ? DType::kF32 : t.dtype == "int64" ? DType::kI64 : DType::kU8;
      TensorView v{dtype, Shape(t.shape), t.data.data()};
      if (v.nbytes() != t.data.size()) {
        invalid_argument("save_static_inputs: tensor " + name + " holds " + std::to_string(t.data.size()) +
                         " bytes, not the " + std::to_string(v.nbytes()) + " its dtype and shape need");
      }
      w.add(name, v);
    }
    w.add_metadata("format", "staticlm-static-inputs");
    w.add_metadata("vision_profile", report.vision_profile);
    w.add_metadata("max_seq", std::to_string(ids->second.shape[1]));
    w.write(path);
  });
}

}  // namespace staticlm::api
