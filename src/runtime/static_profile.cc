#include "runtime/static_profile.h"

#include <cstring>
#include <tuple>

#include "base/error.h"
#include "base/sha256.h"

namespace staticlm {

namespace {

std::string single_quoted(const std::string& s) { return "'" + s + "'"; }

std::string profile_prefix(const VisionProfile& p) { return std::string("vision profile ") + single_quoted(p.name) + ": "; }

std::string ints(std::span<const std::int64_t> v, std::size_t limit = 16) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < limit; ++i) s += std::string(i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > limit) s += std::string(", ... (") + std::to_string(v.size()) + " in all)";
  return s + "]";
}

// Describes a run of positions compactly: "[1, 265)" when contiguous, else the first few.
std::string describe_positions(const std::vector<std::int64_t>& pos) {
  if (pos.empty()) return "none";
  bool contiguous = true;
  for (std::size_t i = 1; i < pos.size(); ++i) contiguous = contiguous && pos[i] == pos[i - 1] + 1;
  if (contiguous) {
    return std::string("[") + std::to_string(pos.front()) + ", " + std::to_string(pos.back() + 1) + ") (" +
           std::to_string(pos.size()) + " tokens)";
  }
  return ints(pos) + " (" + std::to_string(pos.size()) + " tokens, not contiguous)";
}

}  // namespace

void StaticLayout::validate() const {
  const std::string p = "static layout: ";
  if (batch_size != 1) invalid_argument(p + "batch_size is " + std::to_string(batch_size) + "; only batch_size 1 is supported");
  if (max_seq <= 0) invalid_argument(p + "max_seq is " + std::to_string(max_seq) + "; it must be positive");
  if (visual_start_idx < 0)
    invalid_argument(p + "visual_start_idx is " + std::to_string(visual_start_idx) + "; it must be non-negative");
  if (num_visual_tokens < 0)
    invalid_argument(p + "num_visual_tokens is " + std::to_string(num_visual_tokens) + "; it must be non-negative");
  if (visual_end_idx() > max_seq) {
    invalid_argument(p + "visual span [" + std::to_string(visual_start_idx) + ", " + std::to_string(visual_end_idx()) +
                     ") does not fit in max_seq " + std::to_string(max_seq));
  }
}

void VisionProfile::validate() const {
  if (name.empty()) invalid_argument("vision profile: name is empty; a profile needs a name");
  const std::string p = profile_prefix(*this);
  if (batch_size != 1) invalid_argument(p + "batch_size is " + std::to_string(batch_size) + "; only batch_size 1 is supported");
  const std::pair<const char*, std::int64_t> positive[] = {
      {"num_visual_tokens", num_visual_tokens},   {"max_soft_tokens", max_soft_tokens},
      {"patch_grid_height", patch_grid_height},   {"patch_grid_width", patch_grid_width},
      {"patch_size", patch_size},                 {"pooling_kernel_size", pooling_kernel_size}};
  for (const auto& [field, value] : positive) {
    if (value <= 0) invalid_argument(p + field + " is " + std::to_string(value) + "; it must be positive");
  }
  if (visual_start_idx < 0)
    invalid_argument(p + "visual_start_idx is " + std::to_string(visual_start_idx) + "; it must be non-negative");
  // Upper bounds before any product of them is formed or sized: a manifest is a file from
  // anywhere, and max_soft_tokens * pooling^2 sizes the patch tensors. Gemma 4 uses up to 1120
  // soft tokens, pooling 3 and patch 16; the bounds leave room for other exports.
  const std::tuple<const char*, std::int64_t, std::int64_t> bounded[] = {
      {"max_soft_tokens", max_soft_tokens, kMaxProfileSoftTokens},
      {"pooling_kernel_size", pooling_kernel_size, kMaxProfilePooling},
      {"patch_size", patch_size, kMaxProfilePatchSize},
      {"patch_grid_height", patch_grid_height, kMaxProfileSoftTokens * kMaxProfilePooling},
      {"patch_grid_width", patch_grid_width, kMaxProfileSoftTokens * kMaxProfilePooling},
      {"visual_start_idx", visual_start_idx, kMaxProfileSequence}};
  for (const auto& [field, value, limit] : bounded) {
    if (value > limit) {
      invalid_argument(p + field + " is " + std::to_string(value) + "; the limit is " + std::to_string(limit));
    }
  }
  if (patch_grid_height % pooling_kernel_size != 0) {
    invalid_argument(p + "patch_grid_height " + std::to_string(patch_grid_height) +
                     " is not divisible by pooling_kernel_size " + std::to_string(pooling_kernel_size));
  }
  if (patch_grid_width % pooling_kernel_size != 0) {
    invalid_argument(p + "patch_grid_width " + std::to_string(patch_grid_width) +
                     " is not divisible by pooling_kernel_size " + std::to_string(pooling_kernel_size));
  }
  if (num_visual_tokens > max_soft_tokens) {
    invalid_argument(p + "num_visual_tokens " + std::to_string(num_visual_tokens) + " exceeds max_soft_tokens " +
                     std::to_string(max_soft_tokens));
  }
  const std::int64_t derived = soft_grid_height() * soft_grid_width();
  if (derived != num_visual_tokens) {
    invalid_argument(p + "num_visual_tokens is " + std::to_string(num_visual_tokens) + " but the pooled patch grid " +
                     std::to_string(patch_grid_height) + "x" + std::to_string(patch_grid_width) + " / " +
                     std::to_string(pooling_kernel_size) + " gives " + std::to_string(soft_grid_height()) + "x" +
                     std::to_string(soft_grid_width()) + " = " + std::to_string(derived));
  }
  // TICO also checks num_valid_patches <= num_patches; with the two rules above it always holds
  // (H * W = k^2 * num_visual_tokens <= k^2 * max_soft_tokens), so it is not repeated here.
}

void VisionProfile::validate_for_model(std::int64_t max_seq, const VisionConfig* vision) const {
  validate();
  const std::string p = profile_prefix(*this);
  if (visual_end_idx() > max_seq) {
    invalid_argument(p + "visual span [" + std::to_string(visual_start_idx) + ", " + std::to_string(visual_end_idx()) +
                     ") does not fit in max_seq " + std::to_string(max_seq));
  }
  if (vision == nullptr) return;
  if (vision->patch_size != patch_size) {
    invalid_argument(p + "patch_size " + std::to_string(patch_size) + " does not match the model's vision_config.patch_size " +
                     std::to_string(vision->patch_size));
  }
  if (vision->pooling_kernel_size != pooling_kernel_size) {
    invalid_argument(p + "pooling_kernel_size " + std::to_string(pooling_kernel_size) +
                     " does not match the model's vision_config.pooling_kernel_size " +
                     std::to_string(vision->pooling_kernel_size));
  }
  if (vision->default_output_length != max_soft_tokens) {
    invalid_argument(p + "max_soft_tokens " + std::to_string(max_soft_tokens) +
                     " does not match the model's vision_config.default_output_length " +
                     std::to_string(vision->default_output_length));
  }
}

void VisionProfile::validate_tokenizer_add_bos(bool add_bos_token) const {
  if (add_bos_token != tokenizer_add_bos_token) {
    invalid_argument(profile_prefix(*this) + "tokenizer_add_bos_token is " + (tokenizer_add_bos_token ? "true" : "false") +
                     " but the tokenizer's add_bos_token is " + (add_bos_token ? "true" : "false") +
                     "; the image span would move");
  }
}

void VisionProfile::validate_processor(const ProcessorSettings& s) const {
  if (s.add_bos_token) validate_tokenizer_add_bos(*s.add_bos_token);
  const std::pair<const char*, std::pair<std::optional<std::int64_t>, std::int64_t>> image[] = {
      {"patch_size", {s.patch_size, patch_size}},
      {"pooling_kernel_size", {s.pooling_kernel_size, pooling_kernel_size}},
      {"max_soft_tokens", {s.max_soft_tokens, max_soft_tokens}}};
  for (const auto& [field, values] : image) {
    if (values.first && *values.first != values.second) {
      invalid_argument(profile_prefix(*this) + "the image processor's " + field + " is " + std::to_string(*values.first) +
                       " but the profile's is " + std::to_string(values.second));
    }
  }
  if (s.image_seq_length && *s.image_seq_length != max_soft_tokens) {
    invalid_argument(profile_prefix(*this) + "the processor's image_seq_length is " + std::to_string(*s.image_seq_length) +
                     " but the profile's max_soft_tokens is " + std::to_string(max_soft_tokens));
  }
}

StaticLayout VisionProfile::layout(std::int64_t max_seq) const {
  return StaticLayout{max_seq, visual_start_idx, num_visual_tokens, batch_size};
}

Tensor VisionProfile::image_position_ids() const {
  validate();
  Tensor t(DType::kI64, Shape{batch_size, num_patches(), 2});
  auto out = t.as<std::int64_t>();
  const std::int64_t valid = num_valid_patches();
  for (std::int64_t i = 0; i < num_patches(); ++i) {
    out[2 * i] = i < valid ? i % patch_grid_width : -1;
    out[2 * i + 1] = i < valid ? i / patch_grid_width : -1;
  }
  return t;
}

std::string VisionProfile::position_ids_sha256() const {
  // The bytes of an int64 tensor on a little-endian host are what numpy's tobytes() gives.
  const Tensor ids = image_position_ids();
  return sha256_hex(ids.view().bytes());
}

void VisionProfile::validate_text_input_ids(std::span<const std::int64_t> ids, std::int64_t image_token_id) const {
  std::vector<std::int64_t> positions;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == image_token_id) positions.push_back(static_cast<std::int64_t>(i));
  }
  bool ok = static_cast<std::int64_t>(positions.size()) == num_visual_tokens;
  for (std::size_t i = 0; ok && i < positions.size(); ++i) ok = positions[i] == visual_start_idx + static_cast<std::int64_t>(i);
  if (ok) return;
  std::string why;
  if (positions.empty()) {
    why = std::string("the prompt has no image tokens (id ") + std::to_string(image_token_id) + ")";
  } else if (positions.front() != visual_start_idx) {
    why = std::string("the image span starts at ") + std::to_string(positions.front()) + ", not at visual_start_idx " +
          std::to_string(visual_start_idx);
  } else if (static_cast<std::int64_t>(positions.size()) != num_visual_tokens) {
    why = std::string("there are ") + std::to_string(positions.size()) + " image tokens, not num_visual_tokens " +
          std::to_string(num_visual_tokens);
  } else {
    why = "the image tokens are not one contiguous span";
  }
  invalid_argument(profile_prefix(*this) + "processed input_ids do not match the static image span: expected [" +
                   std::to_string(visual_start_idx) + ", " + std::to_string(visual_end_idx()) + "), got " +
                   describe_positions(positions) + "; " + why);
}

void VisionProfile::validate_image_position_ids(const TensorView& ids) const {
  const Tensor expected = image_position_ids();
  const bool same_shape = ids.shape == expected.shape();
  bool equal = false;
  if (same_shape && ids.dtype == DType::kI64) {
    equal = std::memcmp(ids.data, expected.data(), expected.nbytes()) == 0;
  } else if (same_shape && (ids.dtype == DType::kI32)) {
    auto a = ids.as<std::int32_t>();
    auto e = expected.as<std::int64_t>();
    equal = true;
    for (std::size_t i = 0; equal && i < e.size(); ++i) equal = a[i] == e[i];
  }
  if (equal) return;
  // Describe the actual tensor as int64, as TICO does (x >= 0 counts a valid patch).
  std::string actual_valid = "n/a";
  std::string actual_sha = "n/a";
  if (ids.dtype == DType::kI64 || ids.dtype == DType::kI32) {
    Tensor as64(DType::kI64, ids.shape);
    auto out = as64.as<std::int64_t>();
    for (std::int64_t i = 0; i < ids.numel(); ++i) {
      out[i] = ids.dtype == DType::kI64 ? ids.as<std::int64_t>()[i] : ids.as<std::int32_t>()[i];
    }
    actual_sha = sha256_hex(as64.view().bytes());
    if (ids.shape.rank() == 3 && ids.shape[2] == 2) {
      std::int64_t n = 0;
      for (std::int64_t i = 0; i < ids.numel(); i += 2) n += out[i] >= 0;
      actual_valid = std::to_string(n);
    }
  }
  invalid_argument(profile_prefix(*this) + "image_position_ids (" + dtype_name(ids.dtype) +
                   ") do not match the canonical ones: expected_shape=" + expected.shape().to_string() +
                   ", actual_shape=" + ids.shape.to_string() + ", expected_valid_patches=" +
                   std::to_string(num_valid_patches()) + ", actual_valid_patches=" + actual_valid +
                   ", expected_sha256=" + sha256_hex(expected.view().bytes()) + ", actual_sha256=" + actual_sha);
}

void VisionProfile::validate_pixel_values_shape(const Shape& shape) const {
  const Shape expected{batch_size, num_patches(), patch_vector_size()};
  if (shape != expected) {
    invalid_argument(profile_prefix(*this) + "pixel_values shape " + shape.to_string() + " does not match the profile's " +
                     expected.to_string() + " (batch, max_soft_tokens * k^2 patches, 3 * patch_size^2)");
  }
}

void VisionProfile::validate_soft_token_counts(std::span<const std::int64_t> counts) const {
  if (static_cast<std::int64_t>(counts.size()) != batch_size || counts[0] != num_visual_tokens) {
    invalid_argument(profile_prefix(*this) + "num_soft_tokens_per_image is " + ints(counts) + "; expected [" +
                     std::to_string(num_visual_tokens) + "] (one image of num_visual_tokens soft tokens)");
  }
}

const std::vector<VisionProfile>& registered_vision_profiles() {
  // Both E2B profiles: patch 16, pooling 3, 280 soft tokens, the image span right after <|image>.
  static const std::vector<VisionProfile> profiles = {
      {"e2b_66x36_264", 1, 264, 280, 36, 66, 16, 3, 1, false},
      {"e2b_57x42_266", 1, 266, 280, 42, 57, 16, 3, 1, false},
  };
  return profiles;
}

bool is_registered_vision_profile(const std::string& name) {
  for (const VisionProfile& p : registered_vision_profiles()) {
    if (p.name == name) return true;
  }
  return false;
}

const VisionProfile& registered_vision_profile(const std::string& name) {
  std::string names;
  for (const VisionProfile& p : registered_vision_profiles()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  invalid_argument(std::string("unknown vision profile ") + single_quoted(name) + "; registered profiles: " + names +
                   " (or give a vision_profile.json manifest or an inline profile)");
}

VisionProfile build_inline_vision_profile(const InlineVisionProfile& f, std::int64_t max_seq, const VisionConfig* vision) {
  const std::string p = std::string("inline vision profile ") + single_quoted(f.name) + ": ";
  std::string missing;
  const std::pair<const char*, const std::optional<std::int64_t>*> required[] = {
      {"visual_start_idx", &f.visual_start_idx},   {"num_visual_tokens", &f.num_visual_tokens},
      {"max_soft_tokens", &f.max_soft_tokens},     {"patch_grid_height", &f.patch_grid_height},
      {"patch_grid_width", &f.patch_grid_width}};
  for (const auto& [field, value] : required) {
    if (!value->has_value()) missing += (missing.empty() ? "" : ", ") + std::string(field);
  }
  if (!missing.empty()) invalid_argument(p + "missing required field(s): " + missing);
  if (vision == nullptr && (!f.patch_size || !f.pooling_kernel_size)) {
    invalid_argument(p + "patch_size and pooling_kernel_size must be given when the model has no vision_config");
  }
  VisionProfile prof;
  prof.name = f.name;
  prof.visual_start_idx = *f.visual_start_idx;
  prof.num_visual_tokens = *f.num_visual_tokens;
  prof.max_soft_tokens = *f.max_soft_tokens;
  prof.patch_grid_height = *f.patch_grid_height;
  prof.patch_grid_width = *f.patch_grid_width;
  prof.patch_size = f.patch_size ? *f.patch_size : vision->patch_size;
  prof.pooling_kernel_size = f.pooling_kernel_size ? *f.pooling_kernel_size : vision->pooling_kernel_size;
  prof.tokenizer_add_bos_token = f.tokenizer_add_bos_token;
  prof.validate_for_model(max_seq, vision);
  if (f.image_height && *f.image_height != prof.image_height()) {
    invalid_argument(p + "image_height " + std::to_string(*f.image_height) + " does not match the patch grid: expected " +
                     std::to_string(prof.image_height()) + " (patch_grid_height * patch_size)");
  }
  if (f.image_width && *f.image_width != prof.image_width()) {
    invalid_argument(p + "image_width " + std::to_string(*f.image_width) + " does not match the patch grid: expected " +
                     std::to_string(prof.image_width()) + " (patch_grid_width * patch_size)");
  }
  return prof;
}

}  // namespace staticlm
