#include "prompt_source.h"

#include "base/error.h"
#include "base/file.h"
#include "text/chat_render.h"
#include "text/utf8.h"

namespace staticlm::cli {

void check_prompt_utf8(const std::optional<std::string>& prompt, const char* flag) {
  if (!prompt) return;
  if (const std::size_t bad = utf8_first_invalid(*prompt); bad != std::string::npos) {
    invalid_argument(std::string(flag) + ": not valid UTF-8 (bad byte at offset " + std::to_string(bad) + ")");
  }
}

std::string read_prompt_file(const std::string& path) {
  std::string text = read_file(path);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string resolve_prompt(const PromptSource& a, const RuntimeConfig& cfg, std::vector<std::string>& image_paths) {
  image_paths = a.images;
  check_prompt_utf8(a.prompt);
  check_prompt_utf8(a.system, "--system-prompt");
  if (a.system && a.messages) {
    invalid_argument("--system-prompt goes with -p (a --messages file holds its own system message)");
  }
  if (!a.messages && !a.chat) {
    if (a.tools || !a.vars.empty()) invalid_argument("--tools and --var go with --messages or --chat");
    return a.prompt ? *a.prompt : cfg.prompt;
  }
  ChatRenderRequest r;
  r.model_dir = a.model_dir;
  r.template_file = a.chat_template;
  r.vars = a.vars;
  if (a.messages) {
    r.conversation = parse_conversation_json(read_file(*a.messages), *a.messages);
    r.conversation_name = *a.messages;
  } else {
    if (a.system) r.conversation.messages.push_back({{"role", "system"}, {"content", *a.system}});
    r.conversation.messages.push_back({{"role", "user"}, {"content", a.prompt ? *a.prompt : cfg.prompt}});
    r.conversation_name = "--prompt";
  }
  if (a.tools) r.conversation.tools = parse_tools_json(read_file(*a.tools), *a.tools);
  const ChatRenderResult rendered = render_chat(r);
  if (!a.messages) return rendered.text;  // --chat: the --image files stay as given
  std::vector<std::string> paths;
  std::size_t next = 0;
  for (const std::string& source : rendered.images) {
    if (!source.empty()) {
      paths.push_back(source);
    } else if (next < a.images.size()) {
      paths.push_back(a.images[next++]);
    } else {
      invalid_argument(*a.messages + ": an image part names no file and no --image is left for it");
    }
  }
  if (next < a.images.size()) {
    invalid_argument(std::to_string(a.images.size() - next) + " --image file(s) left over: the messages in " + *a.messages +
                     " have " + std::to_string(rendered.images.size()) + " image part(s)");
  }
  image_paths = paths;
  return rendered.text;
}

}  // namespace staticlm::cli
