// The Gemma 4 chat format (spec/gemma4.md §5.5, the E2B/E4B template, as the chat_template.jinja
// that make-model ships renders it): builds the prompt string the instruction-tuned checkpoint
// expects from a list of messages, and reads such a list from the OpenAI-style JSON messages
// format. Plain value types; nothing is borrowed.
//
//   <bos>[<|turn>system\n[<|think|>]SYSTEM<turn|>\n]
//   <|turn>user\nCONTENT<turn|>\n<|turn>model\nCONTENT<turn|>\n ... [<|turn>model\n]
// CONTENT: text parts trimmed, an image part as <|image|> (audio <|audio|>, video <|video|>);
// model turns drop <|channel>...<channel|> thinking (as the checkpoint's template does).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

enum class ChatRole { kSystem, kUser, kModel };

struct ChatPart {
  enum class Type { kText, kImage, kAudio, kVideo };
  Type type = Type::kText;
  std::string text;    // kText
  std::string source;  // media: a path or URL, as given ("" when none was given)
};

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::vector<ChatPart> parts;
  // The content was a plain string, not a list of parts (the template joins a system message's
  // text parts with spaces).
  bool content_is_string = true;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  bool enable_thinking = false;
  std::string bos_token = "<bos>";
};

struct ChatPrompt {
  std::string text;
  std::vector<std::string> images;  // sources of the image parts, in prompt order
  std::vector<std::string> audios;
  std::vector<std::string> videos;
};

// Renders messages (system first if any, then user and model alternating, starting with user;
// a generation prompt needs a user message last). Wrong order throws kInvalidArgument naming the
// message ("messages[2]: ...").
ChatPrompt render_gemma4_chat(std::span<const ChatMessage> messages, const ChatOptions& options = {});

// Messages for one user prompt with optional images (placed before the text) and system prompt.
std::vector<ChatMessage> chat_from_prompt(const std::string& prompt, const std::vector<std::string>& images,
                                          const std::string& system);

// Reads OpenAI-style messages: a JSON array of {"role", "content"} (or {"messages": [...]}).
// content is a string, null, or a list of parts of type text, image / image_url, audio /
// input_audio, or video. Roles: system, developer, user, assistant (or model). Bad input throws
// kInvalidArgument naming `name` and the field.
std::vector<ChatMessage> parse_chat_messages_json(std::string_view json, const std::string& name);

// Python's str.strip() (what Jinja's trim does): Unicode whitespace off both ends.
std::string python_strip(std::string_view s);

}  // namespace staticlm
