// safetensors: header length, JSON header, tensor table (dtypes, shapes, offsets), metadata;
// then every tensor's bytes are read, so a table that points outside the file is caught.
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "tensor/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The reader maps a path: the input goes to an anonymous in-memory file.
  const int fd = memfd_create("safetensors", 0);
  if (fd < 0) return 0;
  std::size_t off = 0;
  while (off < size) {
    const ssize_t n = write(fd, data + off, size - off);
    if (n <= 0) break;
    off += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  staticlm::fuzz::refuse_or_accept([&] {
    const auto f = staticlm::SafetensorsFile::open(path);
    unsigned sum = 0;
    for (const std::string& name : f->names()) {
      const staticlm::TensorView v = f->get(name);
      const auto* p = static_cast<const std::uint8_t*>(v.data);
      const std::size_t bytes = v.nbytes();
      for (std::size_t i = 0; i < bytes; ++i) sum += p[i];
    }
    for (const auto& [k, val] : f->metadata()) sum += static_cast<unsigned>(k.size() + val.size());
    if (sum == 0xdeadbeef) std::abort();  // keeps the reads
  });
  close(fd);
  return 0;
}
