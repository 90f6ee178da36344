#include "prompt_source.h"

#include <span>

#include "base/error.h"
#include "base/file.h"
#include "text/chat_format.h"

namespace staticlm::cli {

std::string resolve_prompt(const PromptSource& a, const RuntimeConfig& cfg, std::vector<std::string>& image_paths) {
  image_paths = a.images;
  if (!a.messages) {
    const std::string prompt = a.prompt ? *a.prompt : cfg.prompt;
    if (!a.chat) return prompt;
    ChatMessage user;
    user.parts.push_back(ChatPart{ChatPart::Type::kText, prompt, ""});
    return render_gemma4_chat(std::span<const ChatMessage>(&user, 1)).text;
  }
  const std::vector<ChatMessage> messages = parse_chat_messages_json(read_file(*a.messages), *a.messages);
  const ChatPrompt rendered = render_gemma4_chat(messages);
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
