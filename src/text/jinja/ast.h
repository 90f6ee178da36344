// The syntax tree of a parsed template: expressions and statements, each with its source line.
// One plain node type per family keeps the parser and the evaluator short; which fields a node
// uses depends on its kind (listed next to each kind).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja/value.h"

namespace staticlm::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // items
    kTuple,    // items
    kDict,     // items: key, value, key, value, ...
    kUnary,    // name: "-", "+", "not"; a
    kBinary,   // name: operator ("+", "and", "~", ...); a, b
    kCompare,  // a, then ops[i] applied with items[i]: a < items[0] < items[1]
    kTernary,  // a if b else c (c may be null)
    kAttr,     // a.name
    kItem,     // a[b]
    kSlice,    // a[items[0]:items[1]:items[2]] (null parts left out)
    kCall,     // a(items, kwargs)
    kFilter,   // a | name(items, kwargs); a null in a filter block
    kTest,     // a is [not: negated] name(items)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Stmt;
using StmtList = std::vector<std::unique_ptr<Stmt>>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

struct Stmt {
  enum class Kind {
    kText,       // text
    kOutput,     // {{ expr }}
    kIf,         // conditions[i] -> bodies[i]; a final body without condition is the else
    kFor,        // targets in expr [if cond] body [else else_body]
    kSet,        // targets = expr; or ns.attr = expr (attr set)
    kSetBlock,   // {% set targets[0] | filters %} body {% endset %}
    kMacro,      // name(params) body
    kCallBlock,  // {% call(params) expr %} body
    kFilterBlock,  // {% filter filters %} body
    kBreak,
    kContinue,
    kScope,      // a body rendered in place: generation blocks; with blocks (assignments first)
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr, cond;
  std::vector<ExprPtr> conditions;
  std::vector<StmtList> bodies;  // if: one per branch; else: bodies[0] is the body, bodies[1] the else
  std::vector<std::string> targets;
  std::string attr;  // kSet on a namespace: targets[0].attr
  std::vector<MacroParam> params;
  std::vector<ExprPtr> filters;  // kFilter nodes with a null input, applied in order
  std::vector<std::pair<std::string, ExprPtr>> assignments;  // with blocks
};

struct Program {
  std::string name;
  StmtList body;
};

}  // namespace staticlm::jinja
