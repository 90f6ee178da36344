#include "base/mmap.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace staticlm {

std::unique_ptr<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO (or a device) opens at once and is refused below; without it, opening a
  // FIFO waits for a writer forever. It changes nothing for a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) invalid_file(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    invalid_file(path + ": not a regular file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  const std::uint8_t* data = nullptr;
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      invalid_file(path + ": mmap failed (" + std::strerror(e) + ")");
    }
    data = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);  // the mapping stays valid after close
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

}  // namespace staticlm
