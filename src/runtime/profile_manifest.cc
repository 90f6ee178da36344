#include "runtime/profile_manifest.h"

#include <nlohmann/json.hpp>
#include <set>

#include "base/json_limits.h"
#include "base/error.h"
#include "base/file.h"

namespace staticlm {

namespace {

// Keys in TICO's asdict(profile) order, then the derived keys to_manifest() adds.
const char* const kCoreKeys[] = {"name",           "visual_start_idx", "num_visual_tokens", "max_soft_tokens",
                                 "patch_grid_height", "patch_grid_width", "patch_size",     "pooling_kernel_size",
                                 "batch_size",     "tokenizer_add_bos_token"};

nlohmann::json manifest_object(const VisionProfile& p) {
  nlohmann::json j;  // std::map-backed: keys come out sorted, as with sort_keys=True
  j["name"] = p.name;
  j["visual_start_idx"] = p.visual_start_idx;
  j["num_visual_tokens"] = p.num_visual_tokens;
  j["max_soft_tokens"] = p.max_soft_tokens;
  j["patch_grid_height"] = p.patch_grid_height;
  j["patch_grid_width"] = p.patch_grid_width;
  j["patch_size"] = p.patch_size;
  j["pooling_kernel_size"] = p.pooling_kernel_size;
  j["batch_size"] = p.batch_size;
  j["tokenizer_add_bos_token"] = p.tokenizer_add_bos_token;
  j["num_valid_patches"] = p.num_valid_patches();
  j["num_patches"] = p.num_patches();
  j["num_padding_patches"] = p.num_padding_patches();
  j["soft_grid_height"] = p.soft_grid_height();
  j["soft_grid_width"] = p.soft_grid_width();
  j["image_height"] = p.image_height();
  j["image_width"] = p.image_width();
  j["patch_vector_size"] = p.patch_vector_size();
  j["visual_end_idx"] = p.visual_end_idx();
  j["image_position_ids_shape"] = {p.batch_size, p.num_patches(), 2};
  j["image_position_ids_sha256"] = p.position_ids_sha256();
  return j;
}

std::int64_t get_int(const nlohmann::json& j, const char* key, const std::string& source) {
  const nlohmann::json& v = j.at(key);
  if (!v.is_number_integer()) {
    invalid_file(source + ": field '" + key + "' must be an integer, got " + v.dump());
  }
  return v.get<std::int64_t>();
}

}  // namespace

std::string vision_profile_manifest_json(const VisionProfile& profile) {
  profile.validate();
  // indent 2, ASCII-only escapes: the same bytes as Python's json.dumps(indent=2, sort_keys=True).
  return manifest_object(profile).dump(2, ' ', true) + "\n";
}

void save_vision_profile_manifest(const VisionProfile& profile, const std::string& path) {
  write_text_atomic(path, vision_profile_manifest_json(profile));
}

VisionProfile parse_vision_profile_manifest(const std::string& json_text, const std::string& source) {
  check_json_limits(json_text, source);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {  // parse errors, and numbers out of range
    invalid_file(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) invalid_file(source + ": a vision profile manifest must be a JSON object, got " + j.type_name());
  VisionProfile p;
  for (const char* key : kCoreKeys) {
    const bool optional = std::string(key) == "batch_size" || std::string(key) == "tokenizer_add_bos_token";
    if (!j.contains(key) && !optional) invalid_file(source + ": missing field '" + key + "'");
  }
  if (!j.at("name").is_string()) invalid_file(source + ": field 'name' must be a string, got " + j.at("name").dump());
  p.name = j.at("name").get<std::string>();
  p.visual_start_idx = get_int(j, "visual_start_idx", source);
  p.num_visual_tokens = get_int(j, "num_visual_tokens", source);
  p.max_soft_tokens = get_int(j, "max_soft_tokens", source);
  p.patch_grid_height = get_int(j, "patch_grid_height", source);
  p.patch_grid_width = get_int(j, "patch_grid_width", source);
  p.patch_size = get_int(j, "patch_size", source);
  p.pooling_kernel_size = get_int(j, "pooling_kernel_size", source);
  if (j.contains("batch_size")) p.batch_size = get_int(j, "batch_size", source);
  if (j.contains("tokenizer_add_bos_token")) {
    const nlohmann::json& v = j.at("tokenizer_add_bos_token");
    if (!v.is_boolean()) invalid_file(source + ": field 'tokenizer_add_bos_token' must be true or false, got " + v.dump());
    p.tokenizer_add_bos_token = v.get<bool>();
  }
  try {
    p.validate();
  } catch (const Error& e) {
    invalid_file(source + ": " + e.what());
  }
  // Every other key must be a derived field holding exactly the derived value.
  const nlohmann::json derived = manifest_object(p);
  const std::set<std::string> core(std::begin(kCoreKeys), std::end(kCoreKeys));
  for (const auto& [key, value] : j.items()) {
    if (core.count(key)) continue;
    if (!derived.contains(key)) {
      invalid_file(source + ": unknown field '" + key + "' (a vision profile manifest holds the profile's fields, " +
                   "its derived values and image_position_ids_shape / image_position_ids_sha256)");
    }
    if (value != derived.at(key)) {
      invalid_file(source + ": field '" + key + "' is " + value.dump() + " but the profile's fields give " +
                   derived.at(key).dump());
    }
  }
  return p;
}

VisionProfile load_vision_profile_manifest(const std::string& path) {
  return parse_vision_profile_manifest(read_file(path), path);
}

}  // namespace staticlm
