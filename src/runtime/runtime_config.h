// The runtime config: a YAML file with the keys of Samsung TICO's static_gemma4_runtime.yaml
// (flat, or nested under debug.static_gemma4_runtime as TICO writes it) plus staticlm's own, and
// `--set key=value` overrides whose values are parsed as YAML scalars. Unknown keys, wrong types
// and out-of-range values are errors naming the source (file or --set), the key and the value.
// resolve_static_setup() then turns the config into the validated profile and layout.
//
// Plain values; the caller owns them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "runtime/static_profile.h"
#include "staticlm/backend.h"  // RopeSine: the sine-table convention of the decoder graphs

namespace staticlm {

// How an image that does not already have the profile's geometry is handled:
// kStrict runs the processor as Hugging Face does and refuses any other patch grid;
// kFit resizes the image to the profile's patch grid first.
enum class ImageFit { kStrict, kFit };

const char* rope_sine_name(RopeSine r);
const char* image_fit_name(ImageFit f);

// What `vision_profile` names: a registered profile, a vision_profile.json manifest (a value
// ending in ".json"; a relative path is taken from the config file's directory), or an inline
// mapping (InlineVisionProfile's fields).
struct ProfileSource {
  enum class Kind { kRegistered, kManifest, kInline };
  Kind kind = Kind::kRegistered;
  std::string name = kDefaultVisionProfile;  // registered name, or manifest path
  InlineVisionProfile inline_fields;         // kInline only
  std::string describe() const;
};

struct RuntimeConfig {
  // TICO's keys, with TICO's defaults.
  std::string model = "google/gemma-4-e2b-it";
  std::int64_t max_seq = 2048;
  ProfileSource vision_profile;
  std::optional<std::int64_t> image_height, image_width;            // legacy: must agree with the profile
  std::optional<std::int64_t> visual_start_idx, num_visual_tokens;  // legacy: must agree with the profile
  std::string padding_side = "right";  // anything else is refused at load
  std::string device = "cpu";
  std::string prompt = "<|image|>Describe the image.";
  std::int64_t verify_steps = 4;
  std::int64_t gen_steps = 16;
  // staticlm's keys.
  double mask_fill_value = -120.0;  // additive mask value of the PTQ/export ABI; finite and < 0
  RopeSine rope_sine = RopeSine::kPreNegatedSin;  // key `rope_sine` (TICO's `rope` is accepted too)
  ImageFit image_fit = ImageFit::kStrict;
  // Lengths Q of the append-prefill graphs (decoder_layer_append_q{Q}_{i}), strictly increasing.
  // Unset: `run` prefills with the max_seq graphs, `chat` / `serve` append with
  // kDefaultPrefillBuckets (those below max_seq). Set: every prompt, first turn included, goes
  // through the smallest bucket that holds it.
  std::optional<std::vector<std::int64_t>> prefill_buckets;
  // When the next chat turn does not fit max_seq - 1: "error" (refuse it, the conversation
  // stays as it was) or "truncate" (drop the oldest whole turns, keep the system prompt,
  // prefill again).
  std::string context_overflow = "error";
  // `inspect.thresholds.<step>.<metric>: value` (staticlm inspect), keyed "<step>.<metric>" as
  // written; the inspector checks the step and metric names.
  std::map<std::string, double> inspect_thresholds;
};

inline const std::vector<std::int64_t> kDefaultPrefillBuckets = {16, 64, 256};
// The append buckets for max_seq: the configured ones (checked against max_seq), else the
// defaults that fit (Q <= max_seq - 1).
std::vector<std::int64_t> append_buckets_for(const RuntimeConfig& config, std::int64_t max_seq);

// The keys a config may hold, in documentation order.
const std::vector<std::string>& runtime_config_keys();

// Parses YAML text (`source` names it in errors; `base_dir` resolves relative manifest paths),
// then applies each override "key=value" in order. Keys may be dotted: the prefix
// "debug.static_gemma4_runtime." is dropped, and "vision_profile.FIELD=V" sets one field of an
// inline profile. Empty text gives the defaults. An override "--profile V" (kProfileFlag + V)
// is vision_profile=V, named "--profile V" in errors (the CLI's dedicated flag).
inline constexpr std::string_view kProfileFlag = "--profile ";
RuntimeConfig parse_runtime_config(const std::string& yaml_text, const std::string& source,
                                   const std::vector<std::string>& overrides = {}, const std::string& base_dir = "");
// Reads the file at `path` (none: the defaults) and applies the overrides.
RuntimeConfig load_runtime_config(const std::optional<std::string>& path, const std::vector<std::string>& overrides);

// The config as flat YAML (what parse_runtime_config reads back equal).
std::string runtime_config_to_yaml(const RuntimeConfig& config);

// The validated static setup: the profile (registered, manifest or inline, checked against the
// model's vision config when there is one), and the layout for max_seq. The legacy fields must
// equal the profile's values ("image_height conflicts with vision profile ...: configured=..,
// expected=..").
struct StaticSetup {
  VisionProfile profile;
  StaticLayout layout;
};
StaticSetup resolve_static_setup(const RuntimeConfig& config, const VisionConfig* vision);

}  // namespace staticlm
