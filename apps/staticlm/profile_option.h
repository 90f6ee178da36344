// --profile NAME|FILE.json, shared by inputs, run, chat, serve and inspect: the vision profile
// (a registered name or a vision_profile.json manifest), as the runtime config key
// vision_profile. It is applied after --config and before every --set, so
// `--set vision_profile.FIELD=VALUE` edits the profile it names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace staticlm::cli {

void add_profile_option(CLI::App& cmd, std::optional<std::string>& profile);

// The --set list with the profile (when given) first.
std::vector<std::string> with_profile(const std::vector<std::string>& sets, const std::optional<std::string>& profile);

}  // namespace staticlm::cli
