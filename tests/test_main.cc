// main() of every test binary: gtest's, plus sharding by test suite. ctest runs a long binary as
// several processes (CMakeLists.txt, staticlm_add_gtest) with STATICLM_TEST_SUITE_SHARDS=n and
// STATICLM_TEST_SUITE_SHARD_INDEX=i; the suites are dealt out whole, in registration order, to
// process 0, 1, ..., n-1, 0, ... gtest's own sharding (GTEST_TOTAL_SHARDS) deals out single tests, so a suite with
// tests in every shard made its shared inputs (a tiny model, a quantized copy, a server) once in
// each process: 90 of the 290 s of each sanitized integration shard went to such set-ups.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// The environment variable `name` as a count >= 0, or -1 when unset or not a plain number.
long env_count(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n >= 0 ? n : -1;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const long shards = env_count("STATICLM_TEST_SUITE_SHARDS"), index = env_count("STATICLM_TEST_SUITE_SHARD_INDEX");
  if (shards > 1) {
    if (index < 0 || index >= shards) {
      std::fprintf(stderr, "STATICLM_TEST_SUITE_SHARD_INDEX must be 0 to %ld (STATICLM_TEST_SUITE_SHARDS=%ld)\n",
                   shards - 1, shards);
      return 2;
    }
    // The other shards' suites join the filter's negative patterns, so a filter given
    // (GTEST_FILTER, --gtest_filter: positive patterns, exclusions) still applies within the shard.
    // A suite holding more than 1/n of the tests (the bad-input catalogue, whose inputs are
    // shared between processes) is dealt out test by test instead.
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    std::string filter = GTEST_FLAG_GET(filter);
    std::string others;
    const auto exclude = [&](const std::string& pattern) { others += (others.empty() ? "" : ":") + pattern; };
    long whole = 0, single = 0;
    for (int k = 0; k < unit.total_test_suite_count(); ++k) {
      const ::testing::TestSuite& suite = *unit.GetTestSuite(k);
      if (suite.total_test_count() * shards <= unit.total_test_count()) {
        if (whole++ % shards != index) exclude(std::string(suite.name()) + ".*");
        continue;
      }
      for (int t = 0; t < suite.total_test_count(); ++t) {
        if (single++ % shards != index) exclude(std::string(suite.name()) + "." + suite.GetTestInfo(t)->name());
      }
    }
    if (!others.empty()) {
      const bool has_negative = filter.find('-') != std::string::npos;
      filter += (has_negative ? ":" : "-") + others;
      GTEST_FLAG_SET(filter, filter);
    }
    std::printf("Test suite shard %ld of %ld\n", index + 1, shards);
  }
  const int rc = RUN_ALL_TESTS();
  // A skipped test is not a passing test: CI (.ci/run sets STATICLM_FAIL_ON_SKIP=1) fails the
  // binary when any test skipped (a fixture not fetched, a CPU feature missing), naming each.
  // Elsewhere a skip stays a skip: a user's CPU may lack a kernel target.
  if (env_count("STATICLM_FAIL_ON_SKIP") > 0) {
    const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
    int skipped = 0;
    for (int k = 0; k < unit.total_test_suite_count(); ++k) {
      const ::testing::TestSuite& suite = *unit.GetTestSuite(k);
      for (int t = 0; t < suite.total_test_count(); ++t) {
        const ::testing::TestInfo& info = *suite.GetTestInfo(t);
        if (!info.should_run() || !info.result()->Skipped()) continue;
        const ::testing::TestResult& r = *info.result();
        const std::string why = r.total_part_count() > 0 ? r.GetTestPartResult(0).message() : "";
        std::fprintf(stderr, "skipped (STATICLM_FAIL_ON_SKIP=1 fails it): %s.%s: %s\n", suite.name(), info.name(),
                     why.c_str());
        ++skipped;
      }
    }
    if (skipped > 0) return 1;
  }
  return rc;
}
