// The runtime YAML and --set strings: the text before the first NUL is the file, each line
// after it one KEY=VALUE override; then the static setup is resolved (profile and layout).
#include <sstream>

#include "fuzz_util.h"
#include "runtime/runtime_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  const auto parts = fuzz::split(in);
  const std::string_view yaml = parts.first, sets = parts.second;
  std::vector<std::string> overrides;
  std::istringstream lines{std::string(sets)};
  for (std::string line; std::getline(lines, line);) overrides.push_back(line);
  fuzz::refuse_or_accept([&] {
    const RuntimeConfig c = parse_runtime_config(std::string(yaml), "runtime.yaml", overrides, "/nonexistent");
    if (c.vision_profile.kind != ProfileSource::Kind::kManifest) resolve_static_setup(c, nullptr);
    parse_runtime_config(runtime_config_to_yaml(c), "round trip");
  });
  return 0;
}
