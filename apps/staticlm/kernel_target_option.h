// --kernel-target NAME, shared by the commands that run kernels: pins the dispatched kernel
// target (backends/cpu/kernels/dispatch.h) instead of the best one the CPU has.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace staticlm::cli {

void add_kernel_target_option(CLI::App& cmd, std::optional<std::string>& target);

// Pins the target when given; kInvalidArgument naming the available ones otherwise.
void apply_kernel_target(const std::optional<std::string>& target);

}  // namespace staticlm::cli
