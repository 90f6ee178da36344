// llama-bench's list-valued flags (-p 128,256, -n 16 -n 32, -t 1-8*2): each occurrence of a flag
// holds items separated by commas, each a count or a range "first-last", "first-last+step" or
// "first-last*mult" (both ends included while the next value does not pass last).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace staticlm::cli {

inline constexpr std::size_t kMaxListValues = 1000;  // a typo like 1-100000000 is refused, not run

// `text` as a count (digits only) no larger than max_value; nullopt otherwise.
std::optional<std::int64_t> parse_count(const std::string& text, std::int64_t max_value);

// The values of `flag`'s occurrences in order. kInvalidArgument naming the flag and the item
// for an empty or malformed item, a negative count, a value above max_value, a range whose last
// is below its first, a step below 1, a factor below 2, or more than kMaxListValues values.
std::vector<std::int64_t> parse_count_list(const std::string& flag, const std::vector<std::string>& occurrences,
                                           std::int64_t max_value);

}  // namespace staticlm::cli
