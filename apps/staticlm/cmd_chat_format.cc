// staticlm chat-format [-m DIR | --tokenizer FILE] (--prompt P [--image F]... [--system S] | --messages F)
//                      [--thinking] [--no-generation-prompt] [--ids]
// Prints the Gemma 4 prompt exactly (no newline is added); with --ids, its token ids instead.
// With a tokenizer, the control tokens the prompt uses must exist in it.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/file.h"
#include "cli_text_util.h"
#include "commands.h"
#include "text/chat_format.h"
#include "text/tokenizer.h"

namespace staticlm::cli {
namespace {

struct ChatFormatOptions {
  std::string model_dir, tokenizer, prompt, system, messages;
  std::vector<std::string> images;
  bool has_prompt = false, thinking = false, no_generation_prompt = false, ids = false;
};

void run_chat_format(const ChatFormatOptions& o) {
  if (o.has_prompt == !o.messages.empty()) invalid_argument("give exactly one of --prompt and --messages");
  if (!o.messages.empty() && (!o.images.empty() || !o.system.empty())) {
    invalid_argument("--image and --system go with --prompt; put them in the --messages file instead");
  }
  const std::vector<ChatMessage> messages =
      o.has_prompt ? chat_from_prompt(o.prompt, o.images, o.system) : parse_chat_messages_json(read_file(o.messages), o.messages);
  ChatOptions options;
  options.enable_thinking = o.thinking;
  options.add_generation_prompt = !o.no_generation_prompt;
  ChatPrompt prompt;
  try {
    prompt = render_gemma4_chat(messages, options);
  } catch (const Error& e) {
    if (o.has_prompt) throw;
    throw Error(e.kind(), o.messages + ": " + e.what());  // name the file
  }
  if (o.model_dir.empty() && o.tokenizer.empty()) {
    if (o.ids) invalid_argument("--ids needs a tokenizer: give -m DIR or --tokenizer FILE");
    std::cout << prompt.text << std::flush;
    return;
  }
  const std::string path = tokenizer_path(o.tokenizer, o.model_dir);
  const auto tok = Tokenizer::load(path);
  std::vector<std::string> needed = {options.bos_token, "<|turn>", "<turn|>"};
  if (!prompt.images.empty()) needed.push_back("<|image|>");
  if (!prompt.audios.empty()) needed.push_back("<|audio|>");
  if (!prompt.videos.empty()) needed.push_back("<|video|>");
  if (o.thinking) needed.push_back("<|think|>");
  for (const std::string& t : needed) {
    if (tok->token_to_id(t) < 0) invalid_argument(path + " has no " + t + " token: it is not a Gemma 4 vocabulary");
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
  auto* cmd = app.add_subcommand("chat-format", "Print the Gemma 4 chat prompt for a conversation");
  cmd->add_option("-m,--model", opts->model_dir, "model directory (checks its tokenizer.json has the control tokens)");
  cmd->add_option("--tokenizer", opts->tokenizer, "tokenizer.json to check against (instead of -m)");
  cmd->add_option("--prompt", opts->prompt, "the user's message")->each([opts](const std::string&) { opts->has_prompt = true; });
  cmd->add_option("--image", opts->images, "an image for the user's message (repeatable; placed before the text)");
  cmd->add_option("--system", opts->system, "a system prompt");
  cmd->add_option("--messages", opts->messages, "JSON file with OpenAI-style messages");
  cmd->add_flag("--thinking", opts->thinking, "enable thinking (<|think|> in the system turn)");
  cmd->add_flag("--no-generation-prompt", opts->no_generation_prompt, "leave out the final <|turn>model");
  cmd->add_flag("--ids", opts->ids, "print the prompt's token ids instead of its text");
  cmd->callback([opts] { run_chat_format(*opts); });
}

}  // namespace staticlm::cli
