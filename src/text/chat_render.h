// Renders a conversation with the checkpoint's own chat template, as transformers'
// apply_chat_template does, falling back to the built-in Gemma 4 format (text/chat_format.h)
// only when there is no template. Template lookup: an explicit file, else DIR/chat_template.jinja,
// else DIR/tokenizer_config.json's "chat_template" (a string, or a list of {name, template}
// whose "default" is used); with tools, the checkpoint's "tool_use" template when it has one. The variables: messages (as given), tools (null when none),
// documents (null), add_generation_prompt, the special tokens of tokenizer_config.json
// (bos_token, eos_token, ...), then every --var KEY=JSON in order.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace staticlm {

namespace jinja {
class Template;
}

struct ChatTemplateFile {
  std::string source;
  std::string name;  // for errors: the file, or "DIR/tokenizer_config.json chat_template"
};

// Whether a --chat-template value is a template's text rather than a file name: it holds "{{" or
// "{%" (and no file has that name), as llama.cpp's --chat-template takes the template inline.
bool is_inline_template(const std::string& value);

// nullopt when there is no template (and no explicit file or inline template). A missing
// explicit file, or a tokenizer_config.json chat_template of the wrong shape, throws naming it.
std::optional<ChatTemplateFile> find_chat_template(const std::string& model_dir, const std::string& template_file);

// The checkpoint's template named "tool_use", which transformers renders instead of the default
// one whenever tools are passed (Command R+, Hermes 2 Pro / 3): DIR/additional_chat_templates/
// tool_use.jinja, else (without DIR/chat_template.jinja) the entry named "tool_use" of
// tokenizer_config.json's list of templates; nullopt when there is none.
std::optional<ChatTemplateFile> find_tool_use_template(const std::string& model_dir);

// A conversation file: a JSON array of messages, or {"messages": [...], "tools": [...]}. Each
// message must be an object with a string "role"; everything else goes to the template as given.
struct ChatMessages {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null when none
};
ChatMessages parse_conversation_json(const std::string& text, const std::string& name);
// A tools file: a JSON array of tool schemas (or {"tools": [...]}).
nlohmann::ordered_json parse_tools_json(const std::string& text, const std::string& name);

struct ChatRenderRequest {
  std::string model_dir;      // "" when none: no template lookup, no special tokens
  std::string template_file;  // --chat-template
  ChatMessages conversation;
  std::string conversation_name;  // the messages file, for errors
  bool add_generation_prompt = true;
  std::vector<std::string> vars;  // "KEY=JSON", applied last
};

struct ChatRenderResult {
  std::string text;
  std::vector<std::string> images;  // sources of the image parts in message order ("" when none named)
  std::string template_name;        // "" when the built-in format was used
};

ChatRenderResult render_chat(const ChatRenderRequest& request);

// What render_chat finds and parses, kept for many renders (a chat renders its whole conversation
// every turn, a server every request): the template, parsed once, and the variables every
// render gets (the special tokens, then each "KEY=JSON" of `vars`). Throws as render_chat does
// for a missing or broken template or a bad variable. render() is const and may run on several
// threads at once.
class ChatRenderer {
 public:
  ChatRenderer(std::string model_dir, const std::string& template_file, const std::vector<std::string>& vars);
  ~ChatRenderer();
  ChatRenderer(const ChatRenderer&) = delete;
  ChatRenderer& operator=(const ChatRenderer&) = delete;

  // `extra`: variables of this render (an object, e.g. a request's chat_template_kwargs), set
  // over all the others.
  ChatRenderResult render(const ChatMessages& conversation, const std::string& conversation_name,
                          bool add_generation_prompt = true, const nlohmann::ordered_json& extra = nullptr) const;
  // The template's name (its file), or "" for the built-in Gemma 4 format; a conversation with
  // tools may be rendered by the checkpoint's tool_use template instead (its name is in the result).
  const std::string& template_name() const { return template_name_; }

 private:
  std::string model_dir_;
  nlohmann::ordered_json fixed_vars_;
  std::unique_ptr<const jinja::Template> template_;  // null: the built-in format
  std::string template_name_;
  // The checkpoint's "tool_use" template (none with an explicit --chat-template): rendered
  // instead when the conversation has tools.
  std::unique_ptr<const jinja::Template> tool_template_;
  std::string tool_template_name_;
  std::exception_ptr tool_template_error_;  // its parse error, raised by a render with tools
};

// llama.cpp's --chat-template-kwargs: a JSON object of template variables, as "KEY=JSON" each
// (ChatRenderRequest::vars); "" gives none. kInvalidArgument naming the flag when it is not a
// JSON object.
std::vector<std::string> template_kwargs_vars(const std::string& json);

// Whether "KEY=JSON" template variables turn Gemma 4's thinking on: the last enable_thinking,
// truthy as Jinja reads it (true, a non-zero number, a non-empty string, list or object).
bool thinking_enabled(const std::vector<std::string>& vars);
bool truthy(const nlohmann::ordered_json& value);

// Image sources of the messages' image / image_url parts, in order ("" for a part without one).
std::vector<std::string> conversation_images(const nlohmann::ordered_json& messages);

}  // namespace staticlm
