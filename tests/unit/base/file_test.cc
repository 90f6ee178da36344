// read_file: whole files, and a clear error instead of an endless read for a device or a pipe
// that never ends (a config or messages path pointing at /dev/zero).
#include "base/file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "test_util.h"

namespace staticlm {
namespace {

TEST(ReadFile, ReadsTheWholeFile) {
  test::TempDir dir;
  const std::string path = dir.file("a.txt");
  std::string text(200000, 'x');
  text += "end";
  std::ofstream(path, std::ios::binary) << text;
  EXPECT_EQ(read_file(path), text);
}

TEST(ReadFile, DirectoryIsRefusedByName) {
  test::TempDir dir;
  try {
    read_file(dir.path());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_EQ(std::string(e.what()), dir.path() + ": is a directory; expected a file");
  }
}

TEST(ReadFile, EndlessInputIsRefusedAtTheLimit) {
  try {
    read_file("/dev/zero");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidFile);
    EXPECT_STREQ(e.what(), "/dev/zero: more than 256 MiB; expected a text or JSON file (the limit for one)");
  }
}

}  // namespace
}  // namespace staticlm
