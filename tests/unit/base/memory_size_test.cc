// The memory bound sizes are checked against: positive, at most the machine's RAM, and the
// check refuses a size past it by name while passing one well inside it.
#include "base/memory_size.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "base/error.h"

namespace staticlm {
namespace {

TEST(MemorySize, UsableMemoryIsAtMostTheMachinesRam) {
  const std::optional<double> usable = usable_memory_bytes();
  ASSERT_TRUE(usable.has_value());
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  EXPECT_GT(*usable, 0);
  EXPECT_LE(*usable, ram);
}

TEST(MemorySize, ASizePastItIsRefusedNamingWhat) {
  const double usable = *usable_memory_bytes();
  EXPECT_NO_THROW(check_fits_memory(usable / 2, "half"));
  try {
    check_fits_memory(usable * 2, "the test's buffers");
    FAIL() << "twice the machine's memory was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("the test's buffers take ", 0), 0u) << m;
    EXPECT_NE(m.find(" GiB of memory this machine gives"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace staticlm
