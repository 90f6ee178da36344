// --var KEY=JSON and llama.cpp's --chat-template-kwargs JSON, shared by run, chat and
// chat-format: chat template variables, collected as "KEY=JSON" (ChatRenderRequest::vars). The
// object's keys come after every --var, in its order.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace staticlm::cli {

void add_template_var_options(CLI::App& cmd, std::vector<std::string>& vars);

}  // namespace staticlm::cli
