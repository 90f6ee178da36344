// vision_profile.json: the deployment manifest Samsung TICO's Gemma4StaticVisionProfile writes
// next to its exported graphs (save_manifest): the profile's fields, its derived values, and the
// shape and sha256 of the canonical image position ids. A manifest exported by TICO is read here
// unchanged, and one written here is byte-identical to TICO's (json.dumps(indent=2,
// sort_keys=True) + "\n"). Pure functions over values; the caller owns everything.
#pragma once

#include <string>

#include "runtime/static_profile.h"

namespace staticlm {

// The manifest text for a profile (validates it first).
std::string vision_profile_manifest_json(const VisionProfile& profile);
// Writes the manifest atomically (temporary name, then rename).
void save_vision_profile_manifest(const VisionProfile& profile, const std::string& path);

// Parses a manifest; `source` names the file in errors. The eight geometry fields and the
// name are required; batch_size and tokenizer_add_bos_token default to 1 and false. Every
// derived field present (num_patches, ..., image_position_ids_shape, image_position_ids_sha256)
// must equal what the fields imply, and unknown keys are refused: a manifest that disagrees
// with itself is kInvalidFile naming the field, the stored and the derived value.
VisionProfile parse_vision_profile_manifest(const std::string& json_text, const std::string& source);
VisionProfile load_vision_profile_manifest(const std::string& path);

}  // namespace staticlm
