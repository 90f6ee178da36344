#include "base/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "test_util.h"

namespace staticlm {
namespace {

// Published FIPS 180-4 / NIST example digests.
TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Incremental updates in odd-sized pieces give the one-shot digest.
TEST(Sha256, PiecewiseEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 1000; ++i) data += static_cast<char>(i * 37 + 11);
  Sha256 h;
  for (std::size_t pos = 0, step = 1; pos < data.size(); pos += step, step = step % 97 + 3) {
    h.update(data.data() + pos, std::min(step, data.size() - pos));
  }
  std::string hex;
  for (std::uint8_t b : h.digest()) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  EXPECT_EQ(hex, sha256_hex(data));
}

// Against the system's sha256sum, for lengths around the 55/56/64-byte padding boundaries.
TEST(Sha256, MatchesSha256sum) {
  if (std::system("command -v sha256sum >/dev/null 2>&1") != 0) GTEST_SKIP() << "sha256sum not installed";
  test::TempDir dir;
  for (std::size_t n : {0u, 1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 4096u}) {
    std::string data;
    for (std::size_t i = 0; i < n; ++i) data += static_cast<char>((i * 131 + n) & 0xff);
    const std::string tag = std::to_string(n);
    const std::string path = dir.file("d" + tag);
    std::ofstream(path, std::ios::binary) << data;
    const std::string out = dir.file("o" + tag);
    ASSERT_EQ(std::system(("sha256sum " + path + " > " + out).c_str()), 0);
    std::string line;
    std::getline(std::ifstream(out) >> std::ws, line);
    EXPECT_EQ(line.substr(0, 64), sha256_hex(data)) << n << " bytes";
  }
}

}  // namespace
}  // namespace staticlm
