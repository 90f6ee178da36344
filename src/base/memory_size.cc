#include "base/memory_size.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.h"

namespace staticlm {

namespace {

// A limit file holding a byte count ("max" and absurd v1 values mean none).
std::optional<double> cgroup_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const double v = std::stod(text);
  return v > 0 && v < 1e18 ? std::optional<double>(v) : std::nullopt;
}

std::string gib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::optional<double> usable_memory_bytes() {
  std::optional<double> limit;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) limit = static_cast<double>(pages) * static_cast<double>(page);
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::optional<double> c = cgroup_limit(path);
    if (c && (!limit || *c < *limit)) limit = c;
  }
  return limit;
}

void check_fits_memory(double bytes, const std::string& what) {
  const std::optional<double> usable = usable_memory_bytes();
  if (usable && bytes > *usable) {
    invalid_argument(what + " take " + gib(bytes) + ", more than the " + gib(*usable) + " of memory this machine gives");
  }
}

}  // namespace staticlm
