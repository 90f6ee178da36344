// The memory this process may use: the machine's RAM, or the control group's limit where that is
// lower (a container). Sizes a command is about to allocate are compared with it up front, so a
// setting that cannot fit is refused by name instead of ending in the kernel's out-of-memory kill.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace staticlm {

// RAM (sysconf) capped by cgroup v2 memory.max or v1 memory.limit_in_bytes; nullopt if unknown.
std::optional<double> usable_memory_bytes();

// Throws kInvalidArgument "WHAT take N GiB, more than the M GiB of memory this machine gives"
// when `bytes` exceeds usable_memory_bytes(); nothing when that is unknown.
void check_fits_memory(double bytes, const std::string& what);

}  // namespace staticlm
