// read_file: whole files, and a clear error instead of an endless read for a device or a pipe
// that never ends (a config or messages path pointing at /dev/zero). write_text_atomic: a
// symbolic link's file is replaced and the link kept; a device is written in place (renaming
// over /dev/null would replace the node); a directory is refused. Error keeps a NUL visible.
#include "base/file.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
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

TEST(WriteTextAtomic, FollowsLinksWritesDevicesInPlaceRefusesDirectories) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  write_text_atomic(dir.file("real.txt"), "old");
  fs::create_symlink("real.txt", dir.file("link"));
  write_text_atomic(dir.file("link"), "new");
  EXPECT_TRUE(fs::is_symlink(dir.file("link")));
  EXPECT_EQ(read_file(dir.file("real.txt")), "new");

  write_text_atomic("/dev/null", "into the void");
  struct stat st {};
  ASSERT_EQ(stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a character device";

  fs::create_directory(dir.file("d"));
  try {
    write_text_atomic(dir.file("d"), "x");
    FAIL() << "a directory was written";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("d") + ": is a directory, expected a file to write");
  }
  EXPECT_TRUE(fs::is_directory(dir.file("d")));
}

TEST(ErrorMessage, NulIsKeptVisible) {
  const Error e(ErrorKind::kInvalidFile, std::string("role \"a\0b\": expected a string", 29));
  EXPECT_EQ(std::string(e.what()), "role \"a\\x00b\": expected a string");
}

}  // namespace
}  // namespace staticlm
