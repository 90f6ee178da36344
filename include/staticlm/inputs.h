// The host-side tensors of one prompt, as plain arrays: image preprocessing (the processor's
// pixel_values and image_position_ids) and the fixed-shape static inputs (TICO's
// build_static_inputs), named as `staticlm inputs` writes them.
//
// Ownership: every HostTensor owns its bytes; nothing is borrowed. Thread-safe (no shared state).
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

}  // namespace staticlm::api
