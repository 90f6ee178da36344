#include "commands.h"
namespace staticlm::cli {
void add_chat_format_command(CLI::App& app) { app.add_subcommand("chat-format", "(being written)"); }
}
