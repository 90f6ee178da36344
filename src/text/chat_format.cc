#include "text/chat_format.h"

#include <nlohmann/json.hpp>

#include "base/json_limits.h"
#include "base/error.h"
#include "text/regex.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

// Python's str.isspace(): Unicode White_Space plus the separators U+001C..U+001F.
bool python_space(char32_t c) { return is_white_space(c) || (c >= 0x1C && c <= 0x1F); }

// The template's strip_thinking: drop every "<|channel>...<channel|>" span, then trim.
std::string strip_thinking(std::string_view text) {
  static constexpr std::string_view kOpen = "<|channel>", kClose = "<channel|>";
  std::string result;
  std::size_t pos = 0;
  while (true) {
    const std::size_t close = text.find(kClose, pos);
    const std::string_view part = text.substr(pos, close == std::string_view::npos ? std::string_view::npos : close - pos);
    const std::size_t open = part.find(kOpen);
    result.append(open == std::string_view::npos ? part : part.substr(0, open));
    if (close == std::string_view::npos) break;
    pos = close + kClose.size();
  }
  return python_strip(result);
}

const char* role_name(ChatRole r) { return r == ChatRole::kSystem ? "system" : r == ChatRole::kUser ? "user" : "assistant"; }

}  // namespace

std::string python_strip(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e) {
    std::size_t p = b;
    if (!python_space(utf8_decode(s, p))) break;
    b = p;
  }
  while (e > b) {
    std::size_t p = e - 1;
    while (p > b && (static_cast<unsigned char>(s[p]) & 0xC0) == 0x80) --p;
    std::size_t q = p;
    if (!python_space(utf8_decode(s, q))) break;
    e = p;
  }
  return std::string(s.substr(b, e - b));
}

ChatPrompt render_gemma4_chat(std::span<const ChatMessage> messages, const ChatOptions& options) {
  if (messages.empty()) invalid_argument("messages: there are no messages to format");
  ChatPrompt prompt;
  std::string& out = prompt.text;
  out = options.bos_token;
  std::size_t first = 0;
  const bool has_system = messages[0].role == ChatRole::kSystem;
  if (has_system || options.enable_thinking) {
    out += "<|turn>system\n";
    if (options.enable_thinking) out += "<|think|>";
    if (has_system) {
      // Each text trimmed and followed by a space when the content is a list; then all trimmed.
      const ChatMessage& m = messages[0];
      std::string system;
      for (std::size_t i = 0; i < m.parts.size(); ++i) {
        if (m.parts[i].type != ChatPart::Type::kText) {
          invalid_argument("messages[0].content[" + std::to_string(i) + "]: a system message holds text only");
        }
        system += python_strip(m.parts[i].text);
        if (!m.content_is_string) system += ' ';
      }
      out += python_strip(system);
      first = 1;
    }
    out += "<turn|>\n";
  }
  ChatRole expected = ChatRole::kUser;
  for (std::size_t k = first; k < messages.size(); ++k) {
    const ChatMessage& m = messages[k];
    const std::string at = "messages[" + std::to_string(k) + "]";
    if (m.role == ChatRole::kSystem) invalid_argument(at + ": a system message can only come first");
    if (m.role != expected) {
      invalid_argument(at + ": a " + role_name(m.role) + " message follows a " +
                       (k == first ? std::string("system message or nothing") : std::string(role_name(messages[k - 1].role)) + " message") +
                       "; turns must alternate user and assistant, starting with user");
    }
    const bool model = m.role == ChatRole::kModel;
    out += model ? "<|turn>model\n" : "<|turn>user\n";
    for (const ChatPart& p : m.parts) {
      switch (p.type) {
        case ChatPart::Type::kText: out += model ? strip_thinking(p.text) : python_strip(p.text); break;
        case ChatPart::Type::kImage:
          out += "<|image|>";
          prompt.images.push_back(p.source);
          break;
        case ChatPart::Type::kAudio:
          out += "<|audio|>";
          prompt.audios.push_back(p.source);
          break;
        case ChatPart::Type::kVideo:
          out += "<|video|>";
          prompt.videos.push_back(p.source);
          break;
      }
    }
    out += "<turn|>\n";
    expected = model ? ChatRole::kUser : ChatRole::kModel;
  }
  if (options.add_generation_prompt) {
    if (expected != ChatRole::kModel) {
      invalid_argument("messages: the last message is not a user message, so there is no turn for the model to answer");
    }
    out += "<|turn>model\n";
  }
  return prompt;
}

std::vector<ChatMessage> chat_from_prompt(const std::string& prompt, const std::vector<std::string>& images,
                                          const std::string& system) {
  std::vector<ChatMessage> messages;
  if (!system.empty()) messages.push_back({ChatRole::kSystem, {{ChatPart::Type::kText, system, ""}}, true});
  ChatMessage user{ChatRole::kUser, {}, images.empty()};
  for (const std::string& image : images) user.parts.push_back({ChatPart::Type::kImage, "", image});
  user.parts.push_back({ChatPart::Type::kText, prompt, ""});
  messages.push_back(std::move(user));
  return messages;
}

namespace {

using nlohmann::json;

std::string media_source(const json& part, const std::string& key) {
  // {"type": "image", "image": "x.png"} / {"url": ...} / {"path": ...} / {"image_url": {"url": ...}}
  for (const std::string& k : {key, std::string("url"), std::string("path")}) {
    const auto it = part.find(k);
    if (it == part.end()) continue;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("url") && (*it)["url"].is_string()) return (*it)["url"].get<std::string>();
  }
  return std::string();
}

ChatPart read_part(const json& part, const std::string& at) {
  if (!part.is_object()) invalid_argument(at + ": expected an object with a \"type\"");
  const auto type_it = part.find("type");
  if (type_it == part.end() || !type_it->is_string()) invalid_argument(at + ": missing \"type\" (a string)");
  const std::string type = type_it->get<std::string>();
  ChatPart p;
  if (type == "text") {
    const auto t = part.find("text");
    if (t == part.end() || !t->is_string()) invalid_argument(at + ": a text part needs \"text\" (a string)");
    p.text = t->get<std::string>();
  } else if (type == "image" || type == "image_url") {
    p.type = ChatPart::Type::kImage;
    p.source = media_source(part, type);
  } else if (type == "audio" || type == "input_audio") {
    p.type = ChatPart::Type::kAudio;
    p.source = media_source(part, type);
  } else if (type == "video") {
    p.type = ChatPart::Type::kVideo;
    p.source = media_source(part, type);
  } else {
    invalid_argument(at + ".type: unknown part type \"" + type +
                     "\" (expected text, image, image_url, audio, input_audio or video)");
  }
  return p;
}

}  // namespace

std::vector<ChatMessage> parse_chat_messages_json(std::string_view text, const std::string& name) {
  check_json_limits(text, name, kTemplateValueLimits);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    invalid_argument(name + ": not valid JSON: " + e.what());
  }
  if (doc.is_object() && doc.contains("messages")) doc = doc["messages"];
  if (!doc.is_array()) invalid_argument(name + ": expected a JSON array of messages (or {\"messages\": [...]})");
  std::vector<ChatMessage> messages;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& m = doc[i];
    const std::string at = name + ": messages[" + std::to_string(i) + "]";
    if (!m.is_object()) invalid_argument(at + ": expected an object with \"role\" and \"content\"");
    const auto role_it = m.find("role");
    if (role_it == m.end() || !role_it->is_string()) invalid_argument(at + ": missing \"role\" (a string)");
    const std::string role = role_it->get<std::string>();
    ChatMessage msg;
    if (role == "system" || role == "developer") msg.role = ChatRole::kSystem;
    else if (role == "user") msg.role = ChatRole::kUser;
    else if (role == "assistant" || role == "model") msg.role = ChatRole::kModel;
    else invalid_argument(at + ".role: \"" + role + "\" is not supported (expected system, developer, user or assistant)");
    const auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      msg.parts.push_back({ChatPart::Type::kText, "", ""});
    } else if (content->is_string()) {
      msg.parts.push_back({ChatPart::Type::kText, content->get<std::string>(), ""});
    } else if (content->is_array()) {
      msg.content_is_string = false;
      for (std::size_t k = 0; k < content->size(); ++k) {
        msg.parts.push_back(read_part((*content)[k], at + ".content[" + std::to_string(k) + "]"));
      }
    } else {
      invalid_argument(at + ".content: expected a string, null or a list of parts");
    }
    messages.push_back(std::move(msg));
  }
  return messages;
}

}  // namespace staticlm
