#include "runtime/static_input_builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/error.h"
#include "base/file.h"
#include "vision/prompt_expand.h"
#include "vision/static_fit.h"

namespace staticlm {

namespace {

// A JSON file of the checkpoint as an object, or null when the file is absent.
nlohmann::json read_optional_json(const std::string& path) {
  if (!file_exists(path)) return nullptr;
  const std::string text = read_file(path);
  check_json_limits(text, path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse errors, and numbers out of range
    invalid_file(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) invalid_file(path + ": expected a JSON object");
  return j;
}

// The pixel settings of preprocessor_config.json, where a file gives them, must be the Gemma 4
// image processor's (spec/gemma4.md 5.1: RGB, bicubic resize, x / 255, no normalization; the
// vision tower scales to [-1, 1] itself): staticlm's preprocessing does exactly that, so a file
// that asks for anything else is refused by the field rather than silently not done.
void check_pixel_settings(const nlohmann::json& pre, const std::string& path) {
  if (!pre.is_object()) return;
  const auto fail = [&](const char* key, const std::string& expected) {
    unsupported(path + ": " + key + " " + pre[key].dump() + ": staticlm's Gemma 4 image processing takes " + expected);
  };
  const auto flag = [&](const char* key, bool expected) {
    if (pre.contains(key) && !(pre[key].is_boolean() && pre[key].get<bool>() == expected)) fail(key, expected ? "true" : "false");
  };
  flag("do_convert_rgb", true);
  flag("do_resize", true);
  flag("do_rescale", true);
  if (pre.contains("resample") && !(pre["resample"].is_number_integer() && pre["resample"].get<std::int64_t>() == 3)) {
    fail("resample", "3 (bicubic)");
  }
  if (pre.contains("rescale_factor") &&
      !(pre["rescale_factor"].is_number() && std::abs(pre["rescale_factor"].get<double>() * 255.0 - 1.0) < 1e-6)) {
    fail("rescale_factor", "1/255");
  }
  if (!pre.contains("do_normalize") || (pre["do_normalize"].is_boolean() && !pre["do_normalize"].get<bool>())) return;
  if (!pre["do_normalize"].is_boolean()) fail("do_normalize", "false (or true with mean 0 and std 1)");
  // Normalizing with mean 0 and std 1 changes nothing.
  for (const auto& [key, value] : {std::pair{"image_mean", 0.0}, std::pair{"image_std", 1.0}}) {
    if (!pre.contains(key)) continue;
    const double identity = value;  // a copy: clang 14 lambdas cannot capture structured bindings
    const nlohmann::json& v = pre[key];
    const bool ok = (v.is_number() && v.get<double>() == identity) ||
                    (v.is_array() && std::all_of(v.begin(), v.end(), [&](const nlohmann::json& x) { return x.is_number() && x.get<double>() == identity; }));
    if (!ok) fail(key, identity == 0.0 ? "0 (do_normalize is true: no normalization but by mean 0 and std 1)" : "1 (do_normalize is true: no normalization but by mean 0 and std 1)");
  }
}

std::optional<std::int64_t> optional_int(const nlohmann::json& j, const char* key, const std::string& path) {
  if (j.is_null() || !j.contains(key) || j[key].is_null()) return std::nullopt;
  if (!j[key].is_number_integer()) invalid_file(path + ": " + key + " must be an integer, got " + j[key].dump());
  return j[key].get<std::int64_t>();
}

// What the checkpoint's processor files say. add_bos_token comes from tokenizer_config.json;
// when absent, from whether the tokenizer's post-processor adds a token to an empty text (what
// Hugging Face then does).
ProcessorSettings read_processor_settings(const std::string& dir, const Tokenizer& tokenizer) {
  ProcessorSettings s;
  const std::string tok_path = path_join(dir, "tokenizer_config.json");
  const nlohmann::json tok = read_optional_json(tok_path);
  if (!tok.is_null() && tok.contains("add_bos_token")) {
    if (!tok["add_bos_token"].is_boolean()) {
      invalid_file(tok_path + ": add_bos_token must be true or false, got " + tok["add_bos_token"].dump());
    }
    s.add_bos_token = tok["add_bos_token"].get<bool>();
  } else {
    s.add_bos_token = !tokenizer.encode("", true).empty();
  }
  const std::string pre_path = path_join(dir, "preprocessor_config.json");
  const nlohmann::json pre = read_optional_json(pre_path);
  s.patch_size = optional_int(pre, "patch_size", pre_path);
  s.pooling_kernel_size = optional_int(pre, "pooling_kernel_size", pre_path);
  s.max_soft_tokens = optional_int(pre, "max_soft_tokens", pre_path);
  const std::string proc_path = path_join(dir, "processor_config.json");
  s.image_seq_length = optional_int(read_optional_json(proc_path), "image_seq_length", proc_path);
  return s;
}

// A [rows, cols] tensor as [1, rows, cols] (the processor's batch of one image).
Tensor with_batch_dim(const Tensor& t) {
  Tensor out(t.dtype(), Shape{1, t.shape()[0], t.shape()[1]});
  if (t.nbytes()) std::memcpy(out.data(), t.data(), t.nbytes());
  return out;
}

}  // namespace

std::unique_ptr<StaticInputBuilder> StaticInputBuilder::create(const std::string& model_dir, const RuntimeConfig& config,
                                                               bool reserve_decode_slot, bool text_only) {
  std::unique_ptr<StaticInputBuilder> b(new StaticInputBuilder());
  b->model_ = load_model_config(model_dir);
  // max_seq sizes every static input: refuse it before anything is allocated.
  if (config.max_seq > b->model_.text.max_position_embeddings) {
    invalid_argument("max_seq " + std::to_string(config.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(b->model_.text.max_position_embeddings));
  }
  b->tokenizer_ = Tokenizer::load(path_join(model_dir, "tokenizer.json"));
  const ProcessorSettings settings = read_processor_settings(model_dir, *b->tokenizer_);
  b->add_bos_token_ = *settings.add_bos_token;
  b->image_fit_ = config.image_fit;
  StaticInputOptions& o = b->options_;
  b->text_only_ = text_only;
  if (b->model_.vision && !text_only) {
    const StaticSetup setup = resolve_static_setup(config, &*b->model_.vision);
    setup.profile.validate_processor(settings);
    const std::string pre_path = path_join(model_dir, "preprocessor_config.json");
    check_pixel_settings(read_optional_json(pre_path), pre_path);
    if (setup.profile.patch_size != kPatchSize || setup.profile.pooling_kernel_size != kPoolingKernel) {
      unsupported("vision profile '" + setup.profile.name + "': the image processor handles patch_size " +
                  std::to_string(kPatchSize) + " and pooling_kernel_size " + std::to_string(kPoolingKernel) + " only");
    }
    o.profile = setup.profile;
    o.layout = setup.layout;
  } else {
    // A text-only model has no image span; the layout is max_seq slots of text.
    o.layout = StaticLayout{config.max_seq, 0, 0, 1};
    o.layout.validate();
  }
  o.pad_token_id = b->model_.text.pad_token_id;
  o.image_token_id = b->model_.image_token_id;
  o.padding_side = config.padding_side;
  o.reserve_decode_slot = reserve_decode_slot;
  return b;
}

ProcessorBatch StaticInputBuilder::process(const std::string& prompt, std::span<const RgbImage> images) const {
  ProcessorBatch batch;
  std::vector<int> soft_tokens;
  if (images.size() > 1) {
    invalid_argument(std::to_string(images.size()) + " images given; the static layout has one image span, so " +
                     "vision profile '" + options_.profile.name + "' takes at most one image per prompt");
  }
  if (!images.empty()) {
    if (!has_vision()) invalid_argument("an image was given but the model is text-only (its config.json has no vision_config)");
    if (text_only_) invalid_argument("an image was given to a builder made for text prompts only");
    const VisionProfile& p = options_.profile;
    const PatchGrid grid{static_cast<int>(p.patch_grid_height), static_cast<int>(p.patch_grid_width)};
    const FitMode mode = image_fit_ == ImageFit::kFit ? FitMode::kFit : FitMode::kStrict;
    const ProcessedImage img = process_image_for_grid(images[0], grid, mode, static_cast<int>(p.max_soft_tokens));
    batch.pixel_values = with_batch_dim(img.pixel_values);
    batch.image_position_ids = with_batch_dim(img.position_ids);
    batch.num_soft_tokens_per_image = {img.num_soft_tokens};
    soft_tokens.push_back(img.num_soft_tokens);
  }
  ProcessorBatch text = process_text(prompt, soft_tokens);
  batch.input_ids = std::move(text.input_ids);
  batch.attention_mask = std::move(text.attention_mask);
  return batch;
}

ProcessorBatch StaticInputBuilder::process_text(const std::string& prompt, std::span<const int> soft_tokens) const {
  ProcessorBatch batch;
  const std::string text = expand_image_placeholders(prompt, soft_tokens);
  // A text far past max_seq is refused without encoding all of it.
  const std::int64_t max_seq = options_.layout.max_seq;
  Tokenizer::TokenCount count;
  const std::optional<std::vector<int>> encoded =
      tokenizer_->encode_at_most(text, static_cast<std::size_t>(std::max<std::int64_t>(max_seq, 0)), add_bos_token_, &count);
  if (!encoded) {
    out_of_range("Input sequence length T=" + std::string(count.exact ? "" : "at least ") + std::to_string(count.tokens) +
                 " exceeds max_seq " + std::to_string(max_seq));
  }
  const std::vector<int>& ids = *encoded;
  const std::int64_t t = static_cast<std::int64_t>(ids.size());
  batch.input_ids = Tensor(DType::kI64, Shape{1, t});
  batch.attention_mask = Tensor(DType::kI64, Shape{1, t});
  for (std::int64_t i = 0; i < t; ++i) {
    batch.input_ids.as<std::int64_t>()[i] = ids[static_cast<std::size_t>(i)];
    batch.attention_mask->as<std::int64_t>()[i] = 1;  // unpadded: every token is valid
  }
  return batch;
}

StaticInputs StaticInputBuilder::build(const std::string& prompt, std::span<const RgbImage> images) const {
  return build_static_inputs(process(prompt, images), options_);
}

void set_vision_profile(SubgraphProfile& p, const VisionProfile& v) {
  p.visual_start_idx = v.visual_start_idx;
  p.num_visual_tokens = v.num_visual_tokens;
  p.num_patches = v.num_patches();
  p.patch_vector_size = v.patch_vector_size();
  p.patch_grid_height = v.patch_grid_height;
  p.patch_grid_width = v.patch_grid_width;
}

}  // namespace staticlm
