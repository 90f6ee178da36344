// The Jinja parser: tokens -> Program, with jinja2's operator precedence (or < and < not <
// comparisons < + - < ~ < * / // % < ** < unary - + < filters, tests and postfix) and the
// statements chat templates use: if/elif/else, for (with `if` filter and else), set (plain,
// tuple, namespace attribute, block), macro, call, filter, break/continue, generation, with.
// Anything else is an error naming the template and line.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace staticlm::jinja {

std::unique_ptr<Program> parse_template(std::string_view source, const std::string& name, const LexOptions& options = {});

}  // namespace staticlm::jinja
