#include "template_var_options.h"

#include "text/chat_render.h"

namespace staticlm::cli {

void add_template_var_options(CLI::App& cmd, std::vector<std::string>& vars) {
  cmd.add_option("--var", vars, "set a chat template variable: KEY=JSON (repeatable), e.g. enable_thinking=true");
  // CLI11 runs the options' callbacks in the order they are defined: --var's list is set first,
  // then the object's keys are added after it.
  cmd.add_option_function<std::string>(
      "--chat-template-kwargs",
      [&vars](const std::string& json) {
        const std::vector<std::string> more = template_kwargs_vars(json);
        vars.insert(vars.end(), more.begin(), more.end());
      },
      "chat template variables as one JSON object, as llama.cpp takes them, e.g. '{\"enable_thinking\": true}'");
}

}  // namespace staticlm::cli
