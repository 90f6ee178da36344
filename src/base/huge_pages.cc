#include "base/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

namespace staticlm {

HugePageBuffer::HugePageBuffer(std::size_t bytes) {
  size_ = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (size_ == 0) return;
  // Map one huge page more than asked, then unmap the unaligned head and tail: mmap itself
  // only promises 4 KiB alignment, and a huge page must start on a 2 MiB boundary.
  const std::size_t mapped = size_ + kHugePageBytes;
  void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > base) ::munmap(p, aligned - base);
  const std::uintptr_t end = base + mapped, aligned_end = aligned + size_;
  if (end > aligned_end) ::munmap(reinterpret_cast<void*>(aligned_end), end - aligned_end);
  data_ = reinterpret_cast<void*>(aligned);
  ::madvise(data_, size_, MADV_HUGEPAGE);  // EINVAL where THP is compiled out: 4 KiB pages then
}

HugePageBuffer::~HugePageBuffer() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

void release_mapped_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + page - 1) / page * page, last = (begin + bytes) / page * page;
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace staticlm
