// vision_profile.json manifests.
#include "fuzz_util.h"
#include "json_mutator.h"
#include "runtime/profile_manifest.h"

STATICLM_FUZZ_JSON_MUTATOR

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] {
    const VisionProfile p = parse_vision_profile_manifest(in, "vision_profile.json");
    parse_vision_profile_manifest(vision_profile_manifest_json(p), "round trip");
  });
  return 0;
}
