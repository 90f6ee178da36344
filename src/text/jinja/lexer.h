// The Jinja lexer: template source -> tokens, with jinja2's whitespace rules applied to the text
// between tags: `{%-`/`-%}` (and the same on `{{ }}` and `{# #}`), trim_blocks (the newline after
// a block or comment tag goes), lstrip_blocks (spaces and tabs before a block or comment tag at
// the start of a line go; `{%+` keeps them), the final newline of the source dropped
// (keep_trailing_newline off), `{% raw %}` bodies kept as text. Comments produce no tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace staticlm::jinja {

struct Token {
  enum class Type {
    kText,        // literal output
    kVarBegin,    // {{
    kVarEnd,      // }}
    kBlockBegin,  // {%
    kBlockEnd,    // %}
    kName,
    kString,      // value: the decoded string
    kInt,
    kFloat,
    kOperator,    // + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : |
    kEnd,
  };
  Type type = Type::kEnd;
  std::string value;
  int line = 1;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws TemplateError-carrying staticlm errors through `fail_at` (name:line: message).
std::vector<Token> lex_template(std::string_view source, const std::string& name, const LexOptions& options);

}  // namespace staticlm::jinja
