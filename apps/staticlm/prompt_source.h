// The prompt text of `inputs` and `inspect`: --prompt (or the runtime config's prompt) as given,
// or wrapped in the chat format with --chat; or a --messages file rendered with the chat
// format, whose image parts name their files (parts without a file take the --image files in
// order).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/runtime_config.h"

namespace staticlm::cli {

struct PromptSource {
  std::optional<std::string> prompt, messages;
  bool chat = false;
  std::vector<std::string> images;  // --image files
};

// Returns the text; image_paths receives the images in prompt order. kInvalidArgument names the
// messages file when image parts and --image files do not pair up.
std::string resolve_prompt(const PromptSource& source, const RuntimeConfig& config, std::vector<std::string>& image_paths);

}  // namespace staticlm::cli
