// The host-side tensors of one prompt, as plain arrays: image preprocessing (the processor's
// pixel_values and image_position_ids) and the fixed-shape static inputs (TICO's
// build_static_inputs), named as `staticlm inputs` writes them.
//
// Ownership: every HostTensor (and report) owns its bytes; nothing is borrowed. Thread-safe (no
// shared state).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "staticlm/error.h"

namespace staticlm::api {

struct HostTensor {
  std::string dtype;                // "float32", "int64" or "uint8" (NumPy's names)
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> data;  // row-major, native byte order
  std::int64_t numel() const;
};

struct InputOptions {
  std::string config_file;         // runtime config YAML ("" : none)
  std::vector<std::string> sets;   // "key=value" overrides (max_seq, vision_profile, image_fit, ...)
  bool reserve_decode_slot = false;  // refuse prompts longer than max_seq - 1 tokens
};

// llm_input_ids I64 [1,S], attention_mask U8 [1,S], valid_length I64 [1], raw_input_ids I64
// [1,T] and, with an image, pixel_values F32 [1,N,768], image_position_ids I64 [1,N,2]. `prompt`
// is used as given ("<|image|>" marks the image); at most one image file.
std::map<std::string, HostTensor> build_static_inputs(const std::string& model_dir, const std::string& prompt,
                                                      const std::vector<std::string>& images = {},
                                                      const InputOptions& options = {});

// pixel_values F32 [1,N,768] and image_position_ids I64 [1,N,2] of one image file, preprocessed
// for the model's vision profile (as build_static_inputs does).
std::map<std::string, HostTensor> preprocess_image(const std::string& model_dir, const std::string& image,
                                                   const InputOptions& options = {});

// One side-by-side check of the static inputs (spec/static-runtime.md (e) step 1): the
// processor run again and every output re-derived independently.
struct StaticInputCheck {
  std::string name;
  bool passed = false;
  std::string detail;
};

struct StaticInputsReport {
  std::map<std::string, HostTensor> tensors;  // as build_static_inputs returns them
  std::string vision_profile;                 // the profile's name ("" : a text-only model)
  std::vector<StaticInputCheck> checks;
  bool all_passed = false;
  // {"model_dir", "T", "S", "valid_length", "pad_token_id", "image_token_id", "vision_profile",
  // "image_fit", "span", ..., "checks", "all_passed", "raw_input_ids_head"}, indented by 2.
  std::string summary_json;
  // "T 9 of S 64[, image span [a, b) of profile P]" and one "  ok    name: detail" (or FAIL) line
  // per check, each line ending in '\n'.
  std::string summary_text;
};

// What `staticlm inputs` checks: build_static_inputs, then the side-by-side checks. A check
// that fails is a report with all_passed false (nothing thrown).
StaticInputsReport check_static_inputs(const std::string& model_dir, const std::string& prompt,
                                       const std::vector<std::string>& images = {}, const InputOptions& options = {});

// Writes report.tensors to `path` as `staticlm inputs` does: safetensors with the metadata
// format, vision_profile and max_seq, written to a temporary name, then renamed.
void save_static_inputs(const StaticInputsReport& report, const std::string& path);

}  // namespace staticlm::api
