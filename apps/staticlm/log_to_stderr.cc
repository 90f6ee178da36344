#include <iostream>

#include "commands.h"

namespace staticlm::cli {

void log_to_stderr(const std::string& line) { std::cerr << line << "\n"; }

}  // namespace staticlm::cli
