#include "profile_option.h"

#include "runtime/runtime_config.h"

namespace staticlm::cli {

void add_profile_option(CLI::App& cmd, std::optional<std::string>& profile) {
  cmd.add_option("--profile", profile,
                 "vision profile: a registered name or a vision_profile.json (applied before --set)");
}

std::vector<std::string> with_profile(const std::vector<std::string>& sets, const std::optional<std::string>& profile) {
  std::vector<std::string> out;
  if (profile) out.push_back(std::string(kProfileFlag) + *profile);
  out.insert(out.end(), sets.begin(), sets.end());
  return out;
}

}  // namespace staticlm::cli
