// read_file: whole files, and a clear error instead of an endless read for a device or a pipe
// that never ends (a config or messages path pointing at /dev/zero). write_text_atomic: a
// symbolic link's file is replaced and the link kept; a device is written in place (renaming
// over /dev/null would replace the node); a directory is refused. Error keeps a NUL visible.
#include "base/file.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

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

// Every path under dir, with the files' contents.
std::vector<std::string> names_under(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    names.push_back(e.path().string() + (e.is_regular_file() ? "=" + read_file(e.path().string()) : "/"));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The pre-checks agree with the real writes, computed both ways on each path: the same error
// message where the write fails, none where it succeeds, and nothing left behind by a check.
TEST(CheckOutput, RefusesWhatTheWriteRefusesAndLeavesNothing) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  write_text_atomic(dir.file("blocker"), "a file");
  fs::create_directory(dir.file("d"));
  fs::create_directory(dir.file("ro"));
  fs::permissions(dir.file("ro"), fs::perms::owner_read | fs::perms::owner_exec);
  const bool root = ::geteuid() == 0;  // root writes into read-only directories
  auto error_of = [](const std::function<void()>& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  for (const std::string& path : {dir.file("new.txt"), dir.file("blocker/x.txt"), dir.file("nowhere/x.txt"),
                                  dir.file("d"), dir.file("blocker"), dir.file("ro/x.txt"), std::string("/dev/null")}) {
    SCOPED_TRACE(path);
    const auto before = names_under(dir.path());
    const std::string checked = error_of([&] { check_output_file(path); });
    EXPECT_EQ(names_under(dir.path()), before) << "the check left something behind";
    const std::string written = error_of([&] { write_text_atomic(path, "x"); });
    EXPECT_EQ(checked, written);
    if (path == dir.file("blocker/x.txt") || path == dir.file("d") || (path == dir.file("ro/x.txt") && !root)) {
      EXPECT_FALSE(checked.empty()) << "expected a refusal";
    }
  }
  for (const std::string& path : {dir.file("new/deeper"), dir.file("d"), dir.file("blocker"), dir.file("blocker/sub"),
                                  dir.file("ro/sub"), std::string("/proc/staticlm-probe-test")}) {
    SCOPED_TRACE(path);
    const auto before = names_under(dir.path());
    const std::string checked = error_of([&] { check_output_dir(path, "--out"); });
    EXPECT_EQ(names_under(dir.path()), before) << "the check left something behind";
    std::error_code ec;
    const bool exists = fs::exists(path, ec);
    fs::create_directories(path, ec);
    const bool made = !ec && fs::is_directory(path, ec);
    EXPECT_EQ(checked.empty(), made) << checked;
    if (!checked.empty()) {
      EXPECT_EQ(checked.rfind("--out " + path + ": ", 0), 0u) << checked;
    }
    if (made && !exists) fs::remove_all(path, ec);
  }
  fs::permissions(dir.file("ro"), fs::perms::owner_all);
}

TEST(ErrorMessage, NulIsKeptVisible) {
  const Error e(ErrorKind::kInvalidFile, std::string("role \"a\0b\": expected a string", 29));
  EXPECT_EQ(std::string(e.what()), "role \"a\\x00b\": expected a string");
}

}  // namespace
}  // namespace staticlm
