#include "base/error.h"
#include "commands.h"

namespace staticlm::cli {

void add_make_model_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("make-model", "(being written)");
  cmd->callback([] { unsupported("make-model is not written yet"); });
}

}  // namespace staticlm::cli
