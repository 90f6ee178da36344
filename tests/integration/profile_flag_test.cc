// --profile NAME|FILE.json on run, chat and inspect (and inputs): the same as
// `--set vision_profile=...`, applied before --set so `--set vision_profile.FIELD=V` edits it.
// The bad names are in the bad-input catalogue.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace staticlm {
namespace {

class ProfileFlag : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::make_tiny_model(dir_->file("m"), 1);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string image_run(const std::string& flags) {
    return "run -m " + dir_->file("m") + " --image " + test::fixture("images/gradient.png") +
           " --set image_fit=fit -p '<|image|>Describe' -n 3 --temp 0 " + flags;
  }
  static test::TempDir* dir_;
};
test::TempDir* ProfileFlag::dir_ = nullptr;

TEST_F(ProfileFlag, RunUsesTheNamedProfile) {
  const auto flag = test::run_staticlm(image_run("--profile e2b_57x42_266"));
  const auto set = test::run_staticlm(image_run("--set vision_profile=e2b_57x42_266"));
  const auto fallback = test::run_staticlm(image_run(""));
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  ASSERT_EQ(set.exit_code, 0) << set.err;
  ASSERT_EQ(fallback.exit_code, 0) << fallback.err;
  EXPECT_EQ(flag.out, set.out);
  // 266 soft tokens (+ <bos>, the image markers and the text) against the default's 264.
  EXPECT_NE(flag.err.find("prefill: 269 tokens"), std::string::npos) << flag.err;
  EXPECT_NE(fallback.err.find("prefill: 267 tokens"), std::string::npos) << fallback.err;
  // A manifest file names the same profile.
  const auto file = test::run_staticlm(image_run("--profile " + test::fixture("static/e2b_57x42_266.vision_profile.json")));
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out, flag.out);
}

TEST_F(ProfileFlag, SetEditsTheProfileGivenByTheFlag) {
  // The chat format puts the image at 5: the profile's span is moved there by --set.
  const auto r = test::run_staticlm(image_run("--chat --profile e2b_57x42_266 --set vision_profile.visual_start_idx=5"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("generated 3 tokens"), std::string::npos) << r.err;
  // Without the move, the span check names the rule.
  const auto off = test::run_staticlm(image_run("--chat --profile e2b_57x42_266"));
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("not at visual_start_idx 1"), std::string::npos) << off.err;
}

TEST_F(ProfileFlag, ChatAndInspectTakeIt) {
  const std::string m = dir_->file("m");
  const auto chat = test::run_staticlm("chat -m " + m + " --profile e2b_57x42_266 --set vision_profile.visual_start_idx=5 --image " +
                                       test::fixture("images/gradient.png") + " --set image_fit=fit -n 2 --temp 0 </dev/null");
  EXPECT_EQ(chat.exit_code, 0) << chat.err;
  const auto inspect = test::run_staticlm("inspect -m " + m + " -p '<|image|>Describe' --image " +
                                          test::fixture("images/gradient.png") +
                                          " --set image_fit=fit --profile e2b_57x42_266 --steps 1-2 --report " +
                                          dir_->file("r.json"));
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
  std::ifstream f(dir_->file("r.json"));
  const auto report = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(f), {}), nullptr, false);
  EXPECT_EQ(report.value("pass", false), true) << inspect.out;
}

}  // namespace
}  // namespace staticlm
