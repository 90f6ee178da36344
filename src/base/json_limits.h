// Limits on JSON read from users' files and requests, checked on the text before it is parsed.
// Nesting: nlohmann's parser is iterative, but everything that walks a parsed document (our
// converters, its own writer, Jinja's str()) recurses once per level: a few MB of "[[[[..."
// would end in a stack overflow instead of an error. Integers: nlohmann turns one past 64 bits
// into a double without a word, so 18446744073709551616 would reach a chat template as
// 1.8446744073709552e+19 where Python's jinja2 prints the integer.
#pragma once

#include <string>
#include <string_view>

namespace staticlm {

// Deeper documents are refused. Real ones (configs, chat messages, tool schemas, tokenizers) nest
// a few tens of levels at most.
inline constexpr int kMaxJsonDepth = 128;

// What check_json_limits does with integers: leave them to the reader (a config's parser names
// the field of a bad one), or refuse those outside [-2^63, 2^63 - 1] (what a chat template's
// values hold).
enum class JsonIntegers { kAny, kInt64 };

// Fails (kInvalidFile, naming `name` and the byte) when brackets outside strings nest deeper
// than kMaxJsonDepth, or with kInt64 when an integer (a number without fraction or exponent)
// lies outside int64. Says nothing about whether the text is otherwise valid JSON.
void check_json_limits(std::string_view text, const std::string& name, JsonIntegers integers = JsonIntegers::kAny);

}  // namespace staticlm
