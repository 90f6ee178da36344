#include "count_list.h"

#include <cctype>
#include <optional>

#include "base/error.h"

namespace staticlm::cli {

namespace {

// Reads the digits at s[i...] as a count no larger than max_value; nullopt when there are none
// or the count is larger.
std::optional<std::int64_t> read_count(const std::string& s, std::size_t& i, std::int64_t max_value) {
  const std::size_t start = i;
  std::int64_t v = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    v = v * 10 + (s[i] - '0');
    if (v > max_value) return std::nullopt;
  }
  if (i == start) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::int64_t> parse_count(const std::string& text, std::int64_t max_value) {
  std::size_t i = 0;
  const std::optional<std::int64_t> v = read_count(text, i, max_value);
  if (i != text.size()) return std::nullopt;
  return v;
}

std::vector<std::int64_t> parse_count_list(const std::string& flag, const std::vector<std::string>& occurrences,
                                           std::int64_t max_value) {
  std::vector<std::int64_t> out;
  const auto fail = [&](const std::string& item, const std::string& why) {
    invalid_argument(flag + " " + item + ": " + why);
  };
  const auto add = [&](std::int64_t v) {
    if (out.size() == kMaxListValues) invalid_argument(flag + ": more than " + std::to_string(kMaxListValues) + " values");
    out.push_back(v);
  };
  const std::string expected = "expected counts 0 to " + std::to_string(max_value) +
                               " separated by commas, or a range first-last, first-last+step or first-last*mult";
  for (const std::string& occurrence : occurrences) {
    std::size_t begin = 0;
    while (true) {
      const std::size_t comma = occurrence.find(',', begin);
      const std::string item = occurrence.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
      std::size_t i = 0;
      const std::optional<std::int64_t> first = read_count(item, i, max_value);
      if (!first) fail(item, expected);
      if (i == item.size()) {
        add(*first);
      } else {
        if (item[i] != '-') fail(item, expected);
        ++i;
        const std::optional<std::int64_t> last = read_count(item, i, max_value);
        if (!last) fail(item, expected);
        if (*last < *first) fail(item, "the range's last value is below its first");
        char op = '+';
        std::int64_t by = 1;
        if (i < item.size()) {
          op = item[i++];
          const std::optional<std::int64_t> n = read_count(item, i, max_value);
          if ((op != '+' && op != '*') || !n || i != item.size()) fail(item, expected);
          by = *n;
          if (op == '+' && by < 1) fail(item, "a range's step must be at least 1");
          if (op == '*' && (by < 2 || *first == 0)) fail(item, "a range's factor must be at least 2, from a first value above 0");
        }
        for (std::int64_t v = *first; v <= *last; v = op == '+' ? v + by : v * by) add(v);
      }
      if (comma == std::string::npos) break;
      begin = comma + 1;
    }
  }
  return out;
}

}  // namespace staticlm::cli
