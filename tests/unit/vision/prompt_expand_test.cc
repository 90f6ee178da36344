// Prompt expansion: each <|image|> becomes <|image> + n x <|image|> + <image|>.
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "vision/prompt_expand.h"

namespace staticlm {
namespace {

TEST(PromptExpand, OneImage) {
  const std::vector<int> n{3};
  EXPECT_EQ(expand_image_placeholders("Look: <|image|> What is it?", n),
            "Look: <|image><|image|><|image|><|image|><image|> What is it?");
}

TEST(PromptExpand, SeveralImagesInOrder) {
  const std::vector<int> n{1, 2};
  EXPECT_EQ(expand_image_placeholders("<|image|><|image|>end", n),
            "<|image><|image|><image|><|image><|image|><|image|><image|>end");
}

TEST(PromptExpand, CountsAddUp) {
  const std::vector<int> n{266, 256, 63};
  const std::string out = expand_image_placeholders("a\n\n<|image|>\n\nb <|image|> c<|image|>", n);
  EXPECT_EQ(count_image_placeholders(out), 266 + 256 + 63);
  EXPECT_EQ(out.size(), std::string("a\n\n\n\nb  c").size() + 3 * (8 + 8) + (266 + 256 + 63) * 9);
}

TEST(PromptExpand, NoImagesLeavesTextAlone) {
  EXPECT_EQ(expand_image_placeholders("plain <|image> text", {}), "plain <|image> text");
}

TEST(PromptExpand, CountMismatchIsAnError) {
  const std::vector<int> one{10};
  try {
    expand_image_placeholders("<|image|> and <|image|>", one);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    EXPECT_STREQ(e.what(),
                 "the prompt has 2 <|image|> placeholder(s) but 1 image(s) were given; each image needs exactly one placeholder");
  }
  EXPECT_THROW(expand_image_placeholders("no marker", one), Error);
  const std::vector<int> negative{-1};
  EXPECT_THROW(expand_image_placeholders("<|image|>", negative), Error);
}

}  // namespace
}  // namespace staticlm
