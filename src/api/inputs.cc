#include "staticlm/inputs.h"

#include <cstring>
#include <optional>

#include "api/guarded.h"
#include "base/error.h"
#include "runtime/runtime_config.h"
#include "runtime/static_input_builder.h"
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

std::unique_ptr<StaticInputBuilder> builder_for(const std::string& model_dir, const InputOptions& o, bool text_only) {
  std::optional<std::string> file;
  if (!o.config_file.empty()) file = o.config_file;
  return StaticInputBuilder::create(model_dir, load_runtime_config(file, o.sets), o.reserve_decode_slot, text_only);
}

std::vector<RgbImage> decode_images(const std::vector<std::string>& paths) {
  std::vector<RgbImage> images;
  for (const std::string& path : paths) images.push_back(decode_image_file(path));
  return images;
}

}  // namespace

std::map<std::string, HostTensor> build_static_inputs(const std::string& model_dir, const std::string& prompt,
                                                      const std::vector<std::string>& images, const InputOptions& o) {
  return guarded([&] {
    // As `staticlm inputs`: a text-only prompt is not checked against the image span.
    const auto builder = builder_for(model_dir, o, /*text_only=*/images.empty());
    const StaticInputs s = builder->build(prompt, decode_images(images));
    std::map<std::string, HostTensor> out;
    out["llm_input_ids"] = host(s.llm_input_ids);
    out["attention_mask"] = host(s.attention_mask);
    out["valid_length"] = host(s.valid_length);
    out["raw_input_ids"] = host(s.raw_input_ids);
    if (s.pixel_values) out["pixel_values"] = host(*s.pixel_values);
    if (s.image_position_ids) out["image_position_ids"] = host(*s.image_position_ids);
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

}  // namespace staticlm::api
