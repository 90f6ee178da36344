// staticlm chat-format [-m DIR | --tokenizer FILE] [--chat-template FILE]
//                      (--prompt P [--image F]... [--system S] | --messages F [--tools F])
//                      [--thinking] [--no-generation-prompt] [--var KEY=JSON]... [--ids]
// Prints the prompt exactly (nothing is added, no newline); with --ids, its token ids instead.
// The prompt is rendered with the chat template (--chat-template, else DIR's chat_template.jinja
// or tokenizer_config.json chat_template) by staticlm's Jinja engine, as transformers'
// apply_chat_template renders it; without a template, with the built-in Gemma 4 format, whose
// control tokens must then exist in the tokenizer.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "cli_text_util.h"
#include "commands.h"
#include "text/chat_render.h"
#include "text/tokenizer.h"
#include "text/utf8.h"
#include "template_var_options.h"

namespace staticlm::cli {
namespace {

struct ChatFormatOptions {
  std::string model_dir, tokenizer, prompt, system, messages, tools, chat_template;
  std::vector<std::string> images, vars;
  bool has_prompt = false, thinking = false, no_generation_prompt = false, ids = false;
};

// The conversation of --prompt / --image / --system, as OpenAI-style messages.
ChatMessages prompt_conversation(const ChatFormatOptions& o) {
  for (const auto& [flag, text] : {std::pair{"--prompt", &o.prompt}, std::pair{"--system", &o.system}}) {
    if (const std::size_t bad = utf8_first_invalid(*text); bad != std::string::npos) {
      invalid_argument(std::string(flag) + ": not valid UTF-8 (bad byte at offset " + std::to_string(bad) + ")");
    }
  }
  ChatMessages c;
  if (!o.system.empty()) c.messages.push_back({{"role", "system"}, {"content", o.system}});
  nlohmann::ordered_json user = {{"role", "user"}};
  if (o.images.empty()) {
    user["content"] = o.prompt;
  } else {
    user["content"] = nlohmann::ordered_json::array();
    for (const std::string& image : o.images) user["content"].push_back({{"type", "image"}, {"image", image}});
    user["content"].push_back({{"type", "text"}, {"text", o.prompt}});
  }
  c.messages.push_back(user);
  return c;
}

void run_chat_format(const ChatFormatOptions& o) {
  if (o.has_prompt == !o.messages.empty()) invalid_argument("give exactly one of --prompt and --messages");
  if (!o.messages.empty() && (!o.images.empty() || !o.system.empty())) {
    invalid_argument("--image and --system go with --prompt; put them in the --messages file instead");
  }
  if (o.ids && o.model_dir.empty() && o.tokenizer.empty()) invalid_argument("--ids needs a tokenizer: give -m DIR or --tokenizer FILE");
  ChatRenderRequest r;
  r.model_dir = o.model_dir;
  r.template_file = o.chat_template;
  r.conversation_name = o.has_prompt ? "--prompt" : o.messages;
  r.conversation = o.has_prompt ? prompt_conversation(o) : parse_conversation_json(read_file(o.messages), o.messages);
  if (!o.tools.empty()) r.conversation.tools = parse_tools_json(read_file(o.tools), o.tools);
  r.add_generation_prompt = !o.no_generation_prompt;
  if (o.thinking) r.vars.push_back("enable_thinking=true");
  r.vars.insert(r.vars.end(), o.vars.begin(), o.vars.end());
  const ChatRenderResult prompt = render_chat(r);
  const bool builtin = prompt.template_name.empty();
  if (!o.ids && (!builtin || (o.model_dir.empty() && o.tokenizer.empty()))) {
    std::cout << prompt.text << std::flush;
    return;
  }
  const std::string path = tokenizer_path(o.tokenizer, o.model_dir);
  const auto tok = Tokenizer::load(path);
  if (builtin) {
    // The built-in format's control tokens must be in the vocabulary.
    std::vector<std::string> needed = {"<bos>", "<|turn>", "<turn|>"};
    if (!prompt.images.empty()) needed.push_back("<|image|>");
    if (o.thinking) needed.push_back("<|think|>");
    for (const std::string& t : needed) {
      if (tok->token_to_id(t) < 0) invalid_argument(path + " has no " + t + " token: it is not a Gemma 4 vocabulary");
    }
  }
  if (!o.ids) {
    std::cout << prompt.text << std::flush;
    return;
  }
  const std::vector<int> ids = tok->encode(prompt.text);
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? " " : "") + std::to_string(ids[i]);
  std::cout << out << "\n" << std::flush;
}

}  // namespace

void add_chat_format_command(CLI::App& app) {
  auto opts = std::make_shared<ChatFormatOptions>();
  auto* cmd = app.add_subcommand("chat-format", "Print the chat prompt for a conversation (the checkpoint's chat template)");
  cmd->add_option("-m,--model", opts->model_dir, "model directory (its chat template, special tokens and tokenizer)");
  cmd->add_option("--tokenizer", opts->tokenizer, "tokenizer.json to check against (instead of -m)");
  cmd->add_option("--chat-template,--chat-template-file", opts->chat_template,
                  "a Jinja chat template: a file, or the template itself (text holding {{ or {%), as llama.cpp's "
                  "--chat-template takes it; overrides the checkpoint's");
  cmd->add_flag("--jinja")->description("accepted for llama.cpp's command lines: chat templates are always rendered as Jinja");
  cmd->add_option("--prompt", opts->prompt, "the user's message")->each([opts](const std::string&) { opts->has_prompt = true; });
  cmd->add_option("--image", opts->images, "an image for the user's message (repeatable; placed before the text)");
  cmd->add_option("--system", opts->system, "a system prompt");
  cmd->add_option("--messages", opts->messages, "JSON file with OpenAI-style messages (or {\"messages\", \"tools\"})");
  cmd->add_option("--tools", opts->tools, "JSON file with the tool schemas (OpenAI style)");
  add_template_var_options(*cmd, opts->vars);
  cmd->add_flag("--thinking", opts->thinking, "enable thinking (the template variable enable_thinking=true)");
  cmd->add_flag("--no-generation-prompt", opts->no_generation_prompt, "add_generation_prompt=false (no final model turn)");
  cmd->add_flag("--ids", opts->ids, "print the prompt's token ids instead of its text");
  cmd->callback([opts] { run_chat_format(*opts); });
}

}  // namespace staticlm::cli
