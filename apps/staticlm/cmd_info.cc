#include "base/error.h"
#include "commands.h"

namespace staticlm::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "(being written)");
  cmd->callback([] { unsupported("info is not written yet"); });
}

}  // namespace staticlm::cli
