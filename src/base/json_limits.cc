#include "base/json_limits.h"

#include "base/error.h"

namespace staticlm {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Whether the digits (no sign, no leading zeros beyond one) of a negative or non-negative
// integer fit in int64.
bool fits_int64(std::string_view digits, bool negative) {
  const std::string_view limit = negative ? "9223372036854775808" : "9223372036854775807";
  if (digits.size() != limit.size()) return digits.size() < limit.size();
  return digits <= limit;
}

}  // namespace

void check_json_limits(std::string_view text, const std::string& name, JsonLimits limits) {
  int depth = 0;
  // Per open bracket: whether it is an object, and its members so far (one ':' each).
  bool object[kMaxJsonDepth + 1] = {};
  std::size_t members[kMaxJsonDepth + 1] = {};
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        invalid_file(name + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (the limit), at byte " +
                     std::to_string(i));
      }
      object[depth] = c == '{';
      members[depth] = 0;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ':' && depth > 0 && object[depth] && limits.max_object_members > 0 &&
               ++members[depth] > limits.max_object_members) {
      invalid_file(name + ": a JSON object of more than " + std::to_string(limits.max_object_members) +
                   " members (the limit), at byte " + std::to_string(i));
    } else if (c == '-' || is_digit(c)) {
      // A number: its digits, then whether a fraction or exponent makes it a float.
      const std::size_t start = i;
      const bool negative = c == '-';
      std::size_t j = negative ? i + 1 : i;
      while (j < text.size() && text[j] == '0' && j + 1 < text.size() && is_digit(text[j + 1])) ++j;
      const std::size_t digits_from = j;
      while (j < text.size() && is_digit(text[j])) ++j;
      const std::string_view digits = text.substr(digits_from, j - digits_from);
      const bool is_float = j < text.size() && (text[j] == '.' || text[j] == 'e' || text[j] == 'E');
      if (limits.int64_integers && !is_float && !digits.empty() && !fits_int64(digits, negative)) {
        invalid_file(name + ": integer " + std::string(text.substr(start, j - start)) + " at byte " + std::to_string(start) +
                     " does not fit in 64 bits (the limit)");
      }
      while (j < text.size() && (is_digit(text[j]) || text[j] == '.' || text[j] == 'e' || text[j] == 'E' ||
                                 text[j] == '+' || text[j] == '-')) {
        ++j;
      }
      i = j - 1;
    }
  }
}

}  // namespace staticlm
