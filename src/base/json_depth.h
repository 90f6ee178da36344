// A nesting limit for JSON read from users' files and requests. nlohmann's parser is iterative,
// but everything that walks a parsed document (our converters, its own writer, Jinja's str())
// recurses once per level: a few MB of "[[[[..." would end in a stack overflow instead of an
// error. The text is scanned before it is parsed.
#pragma once

#include <string>
#include <string_view>

namespace staticlm {

// Deeper documents are refused. Real ones (configs, chat messages, tool schemas, tokenizers) nest
// a few tens of levels at most.
inline constexpr int kMaxJsonDepth = 128;

// Fails (kInvalidFile, naming `name`) when brackets outside strings nest deeper than
// kMaxJsonDepth. Says nothing about whether the text is otherwise valid JSON.
void check_json_depth(std::string_view text, const std::string& name);

}  // namespace staticlm
