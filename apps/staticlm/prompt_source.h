// The prompt text of `run`, `inputs` and `inspect`: --prompt (or the runtime config's prompt) as
// given, or wrapped as one user message with --chat; or a --messages file. Chat prompts are
// rendered with the checkpoint's chat template (text/chat_render.h: --chat-template, else the
// model directory's chat_template.jinja or tokenizer_config.json chat_template), else with the
// built-in Gemma 4 format. Image parts name their files (parts without a file take the --image
// files in order).
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
  std::string model_dir;            // where the chat template is looked for ("" : built-in format)
  std::string chat_template;        // --chat-template FILE
  std::optional<std::string> tools;  // --tools FILE
  std::vector<std::string> vars;    // --var KEY=JSON
  std::optional<std::string> system;  // --system-prompt: a system message before the --chat prompt
};

// Refuses a --prompt (or another text flag) that is not valid UTF-8, naming the flag and the
// offset of the bad byte.
void check_prompt_utf8(const std::optional<std::string>& prompt, const char* flag = "--prompt");

// llama.cpp's -f and -sysf: a file's text without one trailing newline (an editor's last line end
// is not part of the prompt).
std::string read_prompt_file(const std::string& path);

// Returns the text; image_paths receives the images in prompt order. kInvalidArgument names the
// messages file when image parts and --image files do not pair up.
std::string resolve_prompt(const PromptSource& source, const RuntimeConfig& config, std::vector<std::string>& image_paths);

}  // namespace staticlm::cli
