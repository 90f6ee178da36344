// Limits on JSON read from users' files and requests, checked on the text before it is parsed.
// Nesting: nlohmann's parser is iterative, but everything that walks a parsed document (our
// converters, its own writer, Jinja's str()) recurses once per level: a few MB of "[[[[..."
// would end in a stack overflow instead of an error. Integers: nlohmann turns one past 64 bits
// into a double without a word, so 18446744073709551616 would reach a chat template as
// 1.8446744073709552e+19 where Python's jinja2 prints the integer.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace staticlm {

// Deeper documents are refused. Real ones (configs, chat messages, tool schemas, tokenizers) nest
// a few tens of levels at most.
inline constexpr int kMaxJsonDepth = 128;

// What check_json_limits checks besides the nesting. A document whose values reach a chat
// template (messages, tools, --var, request bodies) holds integers of int64's range (as the
// template's values do), and objects of at most kMaxTemplateObjectMembers members: the
// insertion-ordered objects those are parsed into (as Python's dicts keep their order) find a key
// by a linear search, so 100,000 members took 34 s to parse.
struct JsonLimits {
  bool int64_integers = false;
  std::size_t max_object_members = 0;  // 0: any number
};
inline constexpr std::size_t kMaxTemplateObjectMembers = 10000;
inline constexpr JsonLimits kTemplateValueLimits{true, kMaxTemplateObjectMembers};

// Fails (kInvalidFile, naming `name` and the byte) when brackets outside strings nest deeper
// than kMaxJsonDepth, or when `limits` are broken: an integer (a number without fraction or
// exponent) outside int64, an object with too many members. Says nothing about whether the text
// is otherwise valid JSON.
void check_json_limits(std::string_view text, const std::string& name, JsonLimits limits = {});

}  // namespace staticlm
