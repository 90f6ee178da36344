#include "base/file.h"

#include <fcntl.h>
#include <sys/stat.h>
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

namespace {

// Where write_file_atomic writes path: a symbolic link is followed (the file it names is
// replaced and the link stays). A directory there is refused.
std::string output_target(const std::string& path, std::filesystem::file_status& st) {
  namespace fs = std::filesystem;
  if (path.empty()) invalid_argument("an output path is empty");
  std::error_code ec;
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    const fs::path resolved = fs::weakly_canonical(path, ec);
    if (!ec) target = resolved.string();
  }
  st = fs::status(target, ec);
  if (fs::is_directory(st)) invalid_argument(path + ": is a directory, expected a file to write");
  return target;
}

std::string temporary_name(const std::string& target) { return target + ".tmp." + std::to_string(::getpid()); }

}  // namespace

void check_output_file(const std::string& path) {
  std::filesystem::file_status st;
  const std::string target = output_target(path, st);
  if (std::filesystem::exists(st)) return;  // a file is replaced by a rename, a device or pipe written in place
  const std::string tmp = temporary_name(target);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) invalid_argument(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(tmp.c_str());
}

void check_output_dir(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    if (!fs::is_directory(path, ec)) invalid_argument(what + " " + path + ": exists and is not a directory");
    return;
  }
  // The nearest existing ancestor must take a new directory: one is made there and removed.
  fs::path at = fs::absolute(path, ec).lexically_normal();
  while (at.has_relative_path() && !fs::exists(fs::symlink_status(at, ec))) at = at.parent_path();
  if (at.empty()) at = "/";
  const std::string probe = (at / (".staticlm-probe." + std::to_string(::getpid()))).string();
  if (::mkdir(probe.c_str(), 0755) == 0) {
    ::rmdir(probe.c_str());
  } else if (errno != EEXIST) {  // one left by a killed process of this pid: the place takes directories
    invalid_argument(what + " " + path + ": cannot create the directory (" + std::strerror(errno) + ")");
  }
}

void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& write) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st;
  const std::string target = output_target(path, st);
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
  const std::string tmp = temporary_name(target);
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
