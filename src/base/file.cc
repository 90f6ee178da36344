#include "base/file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace staticlm {

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) invalid_file(path + ": is a directory; expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) invalid_file(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  // Read in pieces up to the limit: a device or pipe (/dev/zero, a symlink to one) may never end.
  std::string out;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    if (out.size() + static_cast<std::size_t>(in.gcount()) > kMaxReadFileBytes) {
      invalid_file(path + ": more than " + std::to_string(kMaxReadFileBytes >> 20) +
                   " MiB; expected a text or JSON file (the limit for one)");
    }
    out.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) invalid_file(path + ": read failed");
  return out;
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  if (path.empty()) invalid_argument("an output path is empty");
  std::error_code ec;
  // A symbolic link is followed: the file it names is replaced and the link stays.
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  const fs::file_status st = fs::status(target, ec);
  if (fs::is_directory(st)) invalid_argument(path + ": is a directory, expected a file to write");
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or a pipe (/dev/null, a FIFO) is written to in place: renaming over it would
    // replace the node itself.
    std::ofstream out(target, std::ios::binary);
    if (!out) invalid_argument(path + ": cannot open for writing (" + std::strerror(errno) + ")");
    write(out);
    out.flush();
    if (!out) invalid_file(path + ": write failed");
    return;
  }
  const std::string tmp = target + ".tmp." + std::to_string(::getpid());
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) invalid_argument(path + ": cannot open for writing (" + std::strerror(errno) + ")");
      write(out);
      out.flush();
      if (!out) invalid_file(path + ": write failed (disk full?)");
    }
    fs::rename(tmp, target, ec);
    if (ec) invalid_file(path + ": cannot rename temporary file (" + ec.message() + ")");
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_text_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, [&](std::ostream& out) { out.write(text.data(), static_cast<std::streamsize>(text.size())); });
}

std::string path_join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace staticlm
