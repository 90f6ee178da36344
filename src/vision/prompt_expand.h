// Prompt expansion for images (spec gemma4.md §5.2): each "<|image|>" placeholder in the prompt
// text becomes "<|image>" + n x "<|image|>" + "<image|>", with n that image's soft-token count,
// in order. Done on text, before tokenization, as Hugging Face's Gemma4Processor does.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace staticlm {

inline constexpr std::string_view kImagePlaceholder = "<|image|>";  // id 258880
inline constexpr std::string_view kBeginOfImage = "<|image>";       // id 255999
inline constexpr std::string_view kEndOfImage = "<image|>";         // id 258882

// Throws kInvalidArgument when the number of placeholders differs from the number of images, or
// a count is negative.
std::string expand_image_placeholders(std::string_view prompt, std::span<const int> num_soft_tokens);

// Number of "<|image|>" placeholders in a text.
int count_image_placeholders(std::string_view prompt);

}  // namespace staticlm
