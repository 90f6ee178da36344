#include "base/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace staticlm {
namespace {

TEST(HugePageBuffer, WholeAlignedZeroedHugePages) {
  for (std::size_t asked : {std::size_t{1}, kHugePageBytes - 1, kHugePageBytes, kHugePageBytes + 1, 3 * kHugePageBytes + 5}) {
    HugePageBuffer b(asked);
    EXPECT_EQ(b.size() % kHugePageBytes, 0u) << asked;
    EXPECT_GE(b.size(), asked);
    EXPECT_LT(b.size(), asked + kHugePageBytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kHugePageBytes, 0u) << asked;
    auto* p = static_cast<unsigned char*>(b.data());
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < b.size(); i += 4096) nonzero += p[i] != 0 || p[i + 4095] != 0;
    EXPECT_EQ(nonzero, 0u);
    std::memset(p, 0xAB, b.size());  // every byte writable (a fault here fails the test)
    EXPECT_EQ(p[b.size() - 1], 0xAB);
  }
  HugePageBuffer none(0);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.data(), nullptr);
}

// Which pages release_mapped_pages drops is seen on anonymous memory, where a dropped page reads
// back as zeros (on the file maps it is used for, it reads back the file's bytes).
TEST(ReleaseMappedPages, DropsOnlyWholePagesInsideTheRange) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = 6 * page;
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  auto* p = static_cast<unsigned char*>(m);
  std::memset(p, 7, bytes);
  // From 100 bytes into page 1 to 50 bytes into page 4: pages 2 and 3 are whole inside it.
  release_mapped_pages(p + page + 100, 3 * page - 50);
  for (std::size_t i = 0; i < bytes; i += page / 4) {
    const bool dropped = i >= 2 * page && i < 4 * page;
    EXPECT_EQ(p[i], dropped ? 0 : 7) << "byte " << i;
  }
  EXPECT_EQ(p[page + 99], 7);
  EXPECT_EQ(p[4 * page + 49], 7);
  // A range inside one page drops nothing.
  std::memset(p, 7, bytes);
  release_mapped_pages(p + 10, page - 20);
  EXPECT_EQ(p[0] + p[page / 2] + p[page - 1], 21);
  ::munmap(m, bytes);
}

}  // namespace
}  // namespace staticlm
