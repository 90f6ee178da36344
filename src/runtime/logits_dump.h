// The --dump-logits file: what a generation saw, in a form another implementation (tools/
// hf_golden.py running Hugging Face) writes too, so the two can be compared tensor by tensor.
//   prefill_logits F32 [V]       soft-capped logits after the last prompt token (chose tokens[0])
//   decode_logits  F32 [n-1, V]  row j: the logits after feeding tokens[j] (chose tokens[j+1])
//   tokens         I64 [n]       the generated tokens
//   vision_embeds  F32 [N, D]    the image rows vision_prefill produced (only when an image was used)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace staticlm {

struct LogitsDump {
  std::vector<float> prefill_logits;  // [V]
  std::vector<float> decode_logits;   // [n-1, V]
  std::vector<std::int64_t> tokens;   // [n]
  std::vector<float> vision_embeds;   // [vision_rows, vision_embeds.size() / vision_rows], or empty
  std::int64_t vision_rows = 0;
};

// Writes atomically (no half file on failure). Throws kInvalidArgument when the sizes disagree.
void write_logits_dump(const std::string& path, const LogitsDump& dump);

// Reads a dump (ours or the golden script's); kInvalidFile naming the path and tensor when a
// tensor is missing or has the wrong dtype or shape.
LogitsDump read_logits_dump(const std::string& path);

}  // namespace staticlm
