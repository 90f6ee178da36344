// Anonymous memory advised for transparent huge pages: the weights decode streams every step
// (`--no-mmap`) and the buffer their bandwidth ceiling is then measured on. With 2 MiB pages a
// streaming read needs 512 times fewer TLB entries and the hardware prefetchers are not stopped
// at every 4 KiB page boundary (docs/quantization.md: ~7% more read bandwidth on a 2-core AMD
// EPYC).
#pragma once

#include <cstddef>

namespace staticlm {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

class HugePageBuffer {
 public:
  // `bytes` (rounded up to whole huge pages) of zeroed memory, 2 MiB aligned; throws
  // std::bad_alloc when the system has none to give. Where the kernel has transparent huge
  // pages off, the memory is the same with 4 KiB pages.
  explicit HugePageBuffer(std::size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// Drops the pages of [p, p + bytes) of a private read-only file map from this process (they
// stay in the page cache): after their bytes were copied elsewhere, they would otherwise count
// twice in the resident set. Only whole pages inside the range are dropped.
void release_mapped_pages(const void* p, std::size_t bytes);

}  // namespace staticlm
