#include "text/chat_render.h"

#include "base/json_limits.h"
#include "base/error.h"
#include "base/file.h"
#include "text/chat_format.h"
#include "text/jinja/template.h"

namespace staticlm {
namespace {

using ojson = nlohmann::ordered_json;

ojson parse_json(const std::string& text, const std::string& name) {
  check_json_limits(text, name, kTemplateValueLimits);
  try {
    return ojson::parse(text);
  } catch (const ojson::exception& e) {
    invalid_argument(name + ": not valid JSON: " + e.what());
  }
}

ojson read_tokenizer_config(const std::string& model_dir) {
  if (model_dir.empty()) return ojson();
  const std::string path = path_join(model_dir, "tokenizer_config.json");
  if (!file_exists(path)) return ojson();
  try {
    // Parsed into sorted objects (a real file may hold thousands of added tokens and integers
    // such as model_max_length 1e30); only what the chat template reads is kept, in order.
    const std::string text = read_file(path);
    check_json_limits(text, path);
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object()) invalid_file(path + ": expected a JSON object");
    ojson kept = ojson::object();
    for (const char* key : {"chat_template", "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                            "mask_token"}) {
      if (j.contains(key)) kept[key] = ojson::parse(j[key].dump());
    }
    return kept;
  } catch (const nlohmann::json::exception& e) {
    invalid_file(path + ": not valid JSON: " + e.what());
  }
}

// The special tokens transformers passes to the template: each *_token entry of
// tokenizer_config.json that is a string (or an AddedToken object's "content").
void add_special_tokens(ojson& vars, const ojson& config) {
  if (!config.is_object()) return;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    const auto it = config.find(key);
    if (it == config.end()) continue;
    if (it->is_string()) vars[key] = *it;
    else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) vars[key] = (*it)["content"];
  }
}

void apply_var(ojson& vars, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) invalid_argument("--var " + assignment + ": expected KEY=JSON");
  const std::string key = assignment.substr(0, eq), value = assignment.substr(eq + 1);
  check_json_limits(value, "--var " + key, kTemplateValueLimits);
  try {
    vars[key] = ojson::parse(value);
  } catch (const ojson::exception&) {
    invalid_argument("--var " + assignment + ": the value is not JSON (a string needs quotes: --var " + key + "='\"" +
                     value + "\"')");
  }
}

std::string media_source(const ojson& part) {
  for (const char* k : {"image", "image_url", "url", "path"}) {
    const auto it = part.find(k);
    if (it == part.end()) continue;
    if (it->is_string()) return it->get<std::string>();
    if (it->is_object() && it->contains("url") && (*it)["url"].is_string()) return (*it)["url"].get<std::string>();
  }
  return "";
}

// The built-in Gemma 4 format, for a checkpoint without a template.
ChatRenderResult render_builtin(const std::string& model_dir, const ChatMessages& conversation,
                                const std::string& conversation_name, bool add_generation_prompt, const ojson& vars) {
  if (!conversation.tools.is_null()) {
    unsupported(conversation_name + ": tools need a chat template, and " +
                (model_dir.empty() ? std::string("no -m DIR or --chat-template was given") : model_dir + " has none") +
                " (the built-in Gemma 4 format has no tool support)");
  }
  ChatOptions options;
  options.add_generation_prompt = add_generation_prompt;
  for (const auto& [key, value] : vars.items()) {
    if (key == "bos_token" && value.is_string()) options.bos_token = value.get<std::string>();
    else if (key == "enable_thinking") options.enable_thinking = truthy(value);  // as Gemma 4's template reads it
    else if (key == "eos_token" || key == "messages" || key == "tools" || key == "documents" || key == "add_generation_prompt" ||
             (key.size() > 6 && key.substr(key.size() - 6) == "_token")) continue;
    else invalid_argument("--var " + key + ": only a Jinja chat template reads it; the built-in Gemma 4 format takes bos_token and enable_thinking");
  }
  const std::vector<ChatMessage> messages = parse_chat_messages_json(conversation.messages.dump(), conversation_name);
  ChatPrompt p;
  try {
    p = render_gemma4_chat(messages, options);
  } catch (const Error& e) {
    throw Error(e.kind(), conversation_name + ": " + e.what());
  }
  return {p.text, p.images, ""};
}

}  // namespace

bool is_inline_template(const std::string& value) {
  return value.find("{{") != std::string::npos || value.find("{%") != std::string::npos;
}

std::optional<ChatTemplateFile> find_chat_template(const std::string& model_dir, const std::string& template_file) {
  if (!template_file.empty()) {
    if (!file_exists(template_file)) {
      // As llama.cpp's --chat-template: the template's text itself.
      if (is_inline_template(template_file)) return ChatTemplateFile{template_file, "--chat-template (the template given inline)"};
      // A bare word is likely one of llama.cpp's built-in template names (chatml, gemma, llama3).
      const bool bare = template_file.find_first_of("/.") == std::string::npos;
      invalid_argument("--chat-template " + template_file + ": no such file" +
                       (bare ? std::string(" (staticlm takes a Jinja template file or its text, not llama.cpp's built-in template "
                                           "names; without the flag the checkpoint's own template is used)")
                             : std::string()));
    }
    return ChatTemplateFile{read_file(template_file), template_file};
  }
  if (model_dir.empty()) return std::nullopt;
  const std::string jinja = path_join(model_dir, "chat_template.jinja");
  if (file_exists(jinja)) return ChatTemplateFile{read_file(jinja), jinja};
  const ojson config = read_tokenizer_config(model_dir);
  if (!config.is_object() || !config.contains("chat_template") || config["chat_template"].is_null()) return std::nullopt;
  const std::string name = path_join(model_dir, "tokenizer_config.json") + " chat_template";
  const ojson& t = config["chat_template"];
  if (t.is_string()) return ChatTemplateFile{t.get<std::string>(), name};
  if (t.is_array()) {
    for (const ojson& entry : t) {
      // As transformers reads the list: the entry whose name is "default" (any other name, of any
      // type, is another template).
      const auto named = [&](const char* key) { return entry.contains(key) && entry[key].is_string(); };
      if (entry.is_object() && named("name") && entry["name"] == "default" && named("template")) {
        return ChatTemplateFile{entry["template"].get<std::string>(), name + " (default)"};
      }
    }
    invalid_file(name + ": a list of templates without one named \"default\"");
  }
  invalid_file(name + ": expected a string or a list of {\"name\", \"template\"}, got " + std::string(t.type_name()));
}

std::optional<ChatTemplateFile> find_tool_use_template(const std::string& model_dir) {
  if (model_dir.empty()) return std::nullopt;
  const std::string file = path_join(path_join(model_dir, "additional_chat_templates"), "tool_use.jinja");
  if (file_exists(file)) return ChatTemplateFile{read_file(file), file};
  if (file_exists(path_join(model_dir, "chat_template.jinja"))) return std::nullopt;  // the config's templates are not read then
  const ojson config = read_tokenizer_config(model_dir);
  if (!config.is_object() || !config.contains("chat_template") || !config["chat_template"].is_array()) return std::nullopt;
  for (const ojson& entry : config["chat_template"]) {
    const auto named = [&](const char* key) { return entry.contains(key) && entry[key].is_string(); };
    if (entry.is_object() && named("name") && entry["name"] == "tool_use" && named("template")) {
      return ChatTemplateFile{entry["template"].get<std::string>(), path_join(model_dir, "tokenizer_config.json") + " chat_template (tool_use)"};
    }
  }
  return std::nullopt;
}

ChatMessages parse_conversation_json(const std::string& text, const std::string& name) {
  ojson doc = parse_json(text, name);
  ChatMessages c;
  if (doc.is_object() && doc.contains("messages")) {
    if (doc.contains("tools") && !doc["tools"].is_null()) c.tools = parse_tools_json(doc["tools"].dump(), name + ": tools");
    doc = doc["messages"];
  }
  if (!doc.is_array()) invalid_argument(name + ": expected a JSON array of messages (or {\"messages\": [...]})");
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string at = name + ": messages[" + std::to_string(i) + "]";
    if (!doc[i].is_object()) invalid_argument(at + ": expected an object with \"role\" and \"content\"");
    if (!doc[i].contains("role") || !doc[i]["role"].is_string()) invalid_argument(at + ": missing \"role\" (a string)");
  }
  if (doc.empty()) invalid_argument(name + ": there are no messages");
  c.messages = std::move(doc);
  return c;
}

ojson parse_tools_json(const std::string& text, const std::string& name) {
  ojson doc = parse_json(text, name);
  if (doc.is_object() && doc.contains("tools")) doc = doc["tools"];
  if (!doc.is_array()) invalid_argument(name + ": expected a JSON array of tools (or {\"tools\": [...]})");
  for (std::size_t i = 0; i < doc.size(); ++i) {
    if (!doc[i].is_object()) invalid_argument(name + ": tools[" + std::to_string(i) + "]: expected an object (a tool schema)");
  }
  return doc;
}

std::vector<std::string> template_kwargs_vars(const std::string& json) {
  if (json.empty()) return {};
  ojson doc;
  try {
    check_json_limits(json, "--chat-template-kwargs", kTemplateValueLimits);
    doc = ojson::parse(json);
  } catch (const ojson::exception& e) {
    invalid_argument("--chat-template-kwargs: not valid JSON: " + std::string(e.what()));
  }
  if (!doc.is_object()) invalid_argument("--chat-template-kwargs: expected a JSON object of template variables, got " + json);
  std::vector<std::string> vars;
  for (const auto& [key, value] : doc.items()) vars.push_back(key + "=" + value.dump());
  return vars;
}

bool truthy(const ojson& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();  // json::empty() is false for any string
  if (v.is_array() || v.is_object()) return !v.empty();
  return false;
}

bool thinking_enabled(const std::vector<std::string>& vars) {
  constexpr std::string_view kKey = "enable_thinking=";
  bool on = false;
  for (const std::string& v : vars) {
    if (v.compare(0, kKey.size(), kKey) == 0) on = truthy(ojson::parse(v.substr(kKey.size()), nullptr, false));
  }
  return on;
}

std::vector<std::string> conversation_images(const ojson& messages) {
  std::vector<std::string> images;
  for (const ojson& m : messages) {
    const auto content = m.find("content");
    if (content == m.end() || !content->is_array()) continue;
    for (const ojson& part : *content) {
      if (!part.is_object()) continue;
      // A part whose type is not a string is not an image; the template sees it as it is.
      const auto type = part.find("type");
      if (type != part.end() && type->is_string() && (*type == "image" || *type == "image_url")) {
        images.push_back(media_source(part));
      }
    }
  }
  return images;
}

ChatRenderResult render_chat(const ChatRenderRequest& r) {
  return ChatRenderer(r.model_dir, r.template_file, r.vars).render(r.conversation, r.conversation_name, r.add_generation_prompt);
}

ChatRenderer::ChatRenderer(std::string model_dir, const std::string& template_file, const std::vector<std::string>& vars)
    : model_dir_(std::move(model_dir)), fixed_vars_(ojson::object()) {
  add_special_tokens(fixed_vars_, read_tokenizer_config(model_dir_));
  for (const std::string& v : vars) apply_var(fixed_vars_, v);
  if (const std::optional<ChatTemplateFile> file = find_chat_template(model_dir_, template_file)) {
    template_ = jinja::Template::parse(file->source, file->name);
    template_name_ = file->name;
  }
  if (template_file.empty()) {
    if (const std::optional<ChatTemplateFile> file = find_tool_use_template(model_dir_)) {
      tool_template_name_ = file->name;
      // One the engine cannot parse fails the renders that would use it (those with tools), not
      // every render of the checkpoint.
      try {
        tool_template_ = jinja::Template::parse(file->source, file->name);
      } catch (const Error&) {
        tool_template_error_ = std::current_exception();
      }
    }
  }
}

ChatRenderer::~ChatRenderer() = default;

ChatRenderResult ChatRenderer::render(const ChatMessages& conversation, const std::string& conversation_name,
                                      bool add_generation_prompt, const ojson& extra) const {
  ojson vars = ojson::object();
  vars["messages"] = conversation.messages;
  vars["tools"] = conversation.tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = add_generation_prompt;
  // Over the per-render variables, in their order: a --var may set any of them.
  for (const auto& [key, value] : fixed_vars_.items()) vars[key] = value;
  if (extra.is_object()) {
    for (const auto& [key, value] : extra.items()) vars[key] = value;
  }
  if (!template_) return render_builtin(model_dir_, conversation, conversation_name, add_generation_prompt, vars);
  // As transformers' get_chat_template: tools passed (an empty list too) pick the tool_use template.
  if (tool_template_error_ && !conversation.tools.is_null()) std::rethrow_exception(tool_template_error_);
  if (tool_template_ && !conversation.tools.is_null()) {
    return {tool_template_->render(vars), conversation_images(conversation.messages), tool_template_name_};
  }
  return {template_->render(vars), conversation_images(conversation.messages), template_name_};
}

}  // namespace staticlm
