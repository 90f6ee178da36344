#include "vision/prompt_expand.h"

#include "base/error.h"

namespace staticlm {

int count_image_placeholders(std::string_view prompt) {
  int n = 0;
  for (std::size_t at = prompt.find(kImagePlaceholder); at != std::string_view::npos;
       at = prompt.find(kImagePlaceholder, at + kImagePlaceholder.size()))
    ++n;
  return n;
}

std::string expand_image_placeholders(std::string_view prompt, std::span<const int> num_soft_tokens) {
  const int markers = count_image_placeholders(prompt);
  if (static_cast<std::size_t>(markers) != num_soft_tokens.size())
    invalid_argument("the prompt has " + std::to_string(markers) + " " + std::string(kImagePlaceholder) +
                     " placeholder(s) but " + std::to_string(num_soft_tokens.size()) +
                     " image(s) were given; each image needs exactly one placeholder");
  std::string out;
  std::size_t done = 0, image = 0;
  for (std::size_t at = prompt.find(kImagePlaceholder); at != std::string_view::npos;
       at = prompt.find(kImagePlaceholder, done), ++image) {
    const int n = num_soft_tokens[image];
    if (n < 0) invalid_argument("image " + std::to_string(image) + " has a negative soft-token count " + std::to_string(n));
    out.append(prompt.substr(done, at - done));
    out.append(kBeginOfImage);
    for (int i = 0; i < n; ++i) out.append(kImagePlaceholder);
    out.append(kEndOfImage);
    done = at + kImagePlaceholder.size();
  }
  out.append(prompt.substr(done));
  return out;
}

}  // namespace staticlm
