#include "text/jinja/parser.h"

#include <cstdlib>
#include <set>

#include "text/jinja/limits.h"

namespace staticlm::jinja {
namespace {

using T = Token::Type;

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& name) : t_(std::move(tokens)), name_(name) {}

  StmtList parse_all() {
    std::string end;
    StmtList body = parse_body({}, &end);
    return body;
  }

 private:
  // Levels of the syntax tree (kMaxSyntaxDepth): each nested construct, and each link of a chain
  // (a + b + c, x.y.z, s | f | g), is one more level that parsing, evaluating and freeing the
  // tree recurse over. A Levels object gives back the ones it added when it goes.
  class Levels {
   public:
    explicit Levels(Parser& p) : p_(p) {}
    ~Levels() { p_.depth_ -= n_; }
    Levels(const Levels&) = delete;
    Levels& operator=(const Levels&) = delete;
    void add() {
      ++n_;
      if (++p_.depth_ > kMaxSyntaxDepth) {
        p_.error("expressions and blocks nested more than " + std::to_string(kMaxSyntaxDepth) + " deep (the limit)");
      }
    }

   private:
    Parser& p_;
    int n_ = 0;
  };

  const Token& cur() const { return t_[i_]; }
  const Token& peek(std::size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  [[noreturn]] void error(const std::string& m, int line = 0) const { fail_at(name_, line ? line : cur().line, m); }
  bool is_op(const char* op) const { return cur().type == T::kOperator && cur().value == op; }
  bool is_name(const char* n) const { return cur().type == T::kName && cur().value == n; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(const char* n) {
    if (!is_name(n)) return false;
    ++i_;
    return true;
  }
  std::string describe(const Token& t) const {
    switch (t.type) {
      case T::kEnd: return "end of template";
      case T::kBlockEnd: return "'%}'";
      case T::kVarEnd: return "'}}'";
      case T::kString: return "string";
      default: return "'" + t.value + "'";
    }
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) error("expected '" + std::string(op) + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != T::kName) error("expected a name, got " + describe(cur()));
    return t_[i_++].value;
  }
  void expect_block_end() {
    if (cur().type != T::kBlockEnd) error("expected the end of the statement ('%}'), got " + describe(cur()));
    ++i_;
  }

  ExprPtr node(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // Statements up to a block tag named in `ends` (consumed with its name, returned in *which).
  StmtList parse_body(const std::set<std::string>& ends, std::string* which) {
    StmtList out;
    while (true) {
      const Token& tok = cur();
      if (tok.type == T::kEnd) {
        if (!ends.empty()) {
          std::string list;
          for (const auto& e : ends) list += (list.empty() ? "" : " or ") + std::string("'") + e + "'";
          error("unexpected end of template: expected " + list);
        }
        return out;
      }
      if (tok.type == T::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kText;
        s->line = tok.line;
        s->text = tok.value;
        out.push_back(std::move(s));
        ++i_;
      } else if (tok.type == T::kVarBegin) {
        ++i_;
        auto s = std::make_unique<Stmt>();
        s->kind = Stmt::Kind::kOutput;
        s->line = tok.line;
        s->expr = parse_tuple(true);
        if (cur().type != T::kVarEnd) error("expected '}}', got " + describe(cur()));
        ++i_;
        out.push_back(std::move(s));
      } else if (tok.type == T::kBlockBegin) {
        ++i_;
        if (cur().type != T::kName) error("expected a statement name after '{%', got " + describe(cur()));
        const std::string name = cur().value;
        if (ends.count(name)) {
          ++i_;
          *which = name;
          return out;
        }
        out.push_back(parse_statement());
      } else {
        error("unexpected " + describe(tok));
      }
    }
  }

  std::unique_ptr<Stmt> make(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  std::unique_ptr<Stmt> parse_statement() {
    Levels levels(*this);
    levels.add();
    const int line = cur().line;
    const std::string tag = t_[i_++].value;
    std::string end;
    if (tag == "if") {
      auto s = make(Stmt::Kind::kIf, line);
      s->conditions.push_back(parse_expression());
      expect_block_end();
      while (true) {
        s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
        if (end == "elif") {
          s->conditions.push_back(parse_expression());
          expect_block_end();
        } else if (end == "else") {
          expect_block_end();
          s->bodies.push_back(parse_body({"endif"}, &end));
          expect_block_end();
          return s;
        } else {
          expect_block_end();
          return s;
        }
      }
    }
    if (tag == "for") {
      auto s = make(Stmt::Kind::kFor, line);
      s->targets = parse_targets();
      if (!accept_name("in")) error("expected 'in' in the for loop, got " + describe(cur()));
      s->expr = parse_tuple(false);
      if (accept_name("if")) s->cond = parse_expression();
      if (is_name("recursive")) error("recursive for loops are not supported");
      expect_block_end();
      s->bodies.push_back(parse_body({"else", "endfor"}, &end));
      expect_block_end();
      if (end == "else") {
        s->bodies.push_back(parse_body({"endfor"}, &end));
        expect_block_end();
      }
      return s;
    }
    if (tag == "set") {
      if (cur().type == T::kName && peek().type == T::kOperator && peek().value == ".") {
        auto s = make(Stmt::Kind::kSet, line);
        s->targets.push_back(t_[i_].value);
        i_ += 2;
        s->attr = expect_name();
        expect_op("=");
        s->expr = parse_tuple(true);
        expect_block_end();
        return s;
      }
      std::vector<std::string> targets = parse_targets();
      if (accept_op("=")) {
        auto s = make(Stmt::Kind::kSet, line);
        s->targets = std::move(targets);
        s->expr = parse_tuple(true);
        expect_block_end();
        return s;
      }
      if (targets.size() != 1) error("a block set assigns one name");
      auto s = make(Stmt::Kind::kSetBlock, line);
      s->targets = std::move(targets);
      while (accept_op("|")) s->filters.push_back(parse_filter(nullptr));
      expect_block_end();
      s->bodies.push_back(parse_body({"endset"}, &end));
      expect_block_end();
      return s;
    }
    if (tag == "macro") {
      auto s = make(Stmt::Kind::kMacro, line);
      s->text = expect_name();
      s->params = parse_params();
      expect_block_end();
      s->bodies.push_back(parse_body({"endmacro"}, &end));
      expect_block_end();
      return s;
    }
    if (tag == "call") {
      auto s = make(Stmt::Kind::kCallBlock, line);
      if (is_op("(")) s->params = parse_params();
      s->expr = parse_expression();
      if (s->expr->kind != Expr::Kind::kCall) error("{% call %} needs a macro call", line);
      expect_block_end();
      s->bodies.push_back(parse_body({"endcall"}, &end));
      expect_block_end();
      return s;
    }
    if (tag == "filter") {
      auto s = make(Stmt::Kind::kFilterBlock, line);
      do {
        s->filters.push_back(parse_filter(nullptr));
      } while (accept_op("|"));
      expect_block_end();
      s->bodies.push_back(parse_body({"endfilter"}, &end));
      expect_block_end();
      return s;
    }
    if (tag == "break" || tag == "continue") {
      auto s = make(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, line);
      expect_block_end();
      return s;
    }
    if (tag == "generation") {
      auto s = make(Stmt::Kind::kScope, line);
      expect_block_end();
      s->bodies.push_back(parse_body({"endgeneration"}, &end));
      expect_block_end();
      return s;
    }
    if (tag == "with") {
      auto s = make(Stmt::Kind::kScope, line);
      while (cur().type != T::kBlockEnd) {
        if (!s->assignments.empty()) expect_op(",");
        std::string n = expect_name();
        expect_op("=");
        s->assignments.emplace_back(std::move(n), parse_expression());
      }
      expect_block_end();
      s->bodies.push_back(parse_body({"endwith"}, &end));
      expect_block_end();
      return s;
    }
    static const std::set<std::string> kClosers = {"elif", "else", "endif", "endfor", "endset", "endmacro",
                                                   "endcall", "endfilter", "endgeneration", "endwith", "endraw"};
    if (kClosers.count(tag)) error("unexpected '{% " + tag + " %}' (nothing open that it closes)", line);
    error("unknown tag '" + tag + "'", line);
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    const bool paren = accept_op("(");
    do {
      names.push_back(expect_name());
    } while (accept_op(","));
    if (paren) expect_op(")");
    return names;
  }

  std::vector<MacroParam> parse_params() {
    std::vector<MacroParam> params;
    expect_op("(");
    while (!accept_op(")")) {
      if (!params.empty()) expect_op(",");
      if (accept_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (accept_op("=")) p.default_value = parse_expression();
      params.push_back(std::move(p));
    }
    return params;
  }

  // Expressions ------------------------------------------------------------------------------

  // An expression, or several separated by commas (a tuple) where jinja2 allows that.
  ExprPtr parse_tuple(bool with_condexpr) {
    const int line = cur().line;
    ExprPtr first = with_condexpr ? parse_expression() : parse_or();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::kTuple, line);
    t->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (cur().type == T::kBlockEnd || cur().type == T::kVarEnd) break;
      t->items.push_back(with_condexpr ? parse_expression() : parse_or());
    }
    return t;
  }

  ExprPtr parse_expression() {
    Levels levels(*this);
    levels.add();
    ExprPtr e = parse_or();
    while (is_name("if")) {
      levels.add();
      const int line = cur().line;
      ++i_;
      auto t = node(Expr::Kind::kTernary, line);
      t->b = parse_or();
      if (accept_name("else")) t->c = parse_expression();
      t->a = std::move(e);
      e = std::move(t);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr a, ExprPtr b, int line) {
    auto e = node(Expr::Kind::kBinary, line);
    e->name = op;
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    Levels levels(*this);
    while (is_name("or")) {
      levels.add();
      const int line = t_[i_++].line;
      e = binary("or", std::move(e), parse_and(), line);
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    Levels levels(*this);
    while (is_name("and")) {
      levels.add();
      const int line = t_[i_++].line;
      e = binary("and", std::move(e), parse_not(), line);
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      Levels levels(*this);
      levels.add();
      auto e = node(Expr::Kind::kUnary, t_[i_++].line);
      e->name = "not";
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == T::kOperator &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
           cur().value == ">" || cur().value == ">=")) {
        op = t_[i_++].value;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && peek().type == T::kName && peek().value == "in") {
        i_ += 2;
        op = "not in";
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::kCompare, line);
        cmp->a = std::move(first);
      }
      cmp->ops.push_back(op);
      cmp->items.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    Levels levels(*this);
    while (is_op("+") || is_op("-")) {
      levels.add();
      const Token& t = t_[i_++];
      e = binary(t.value, std::move(e), parse_concat(), t.line);
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    Levels levels(*this);
    while (is_op("~")) {
      levels.add();
      const int line = t_[i_++].line;
      e = binary("~", std::move(e), parse_math2(), line);
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    Levels levels(*this);
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      levels.add();
      const Token& t = t_[i_++];
      e = binary(t.value, std::move(e), parse_pow(), t.line);
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    Levels levels(*this);
    while (is_op("**")) {
      levels.add();
      const int line = t_[i_++].line;
      e = binary("**", std::move(e), parse_unary(true), line);
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    ExprPtr e;
    Levels levels(*this);
    if (is_op("-") || is_op("+")) {
      levels.add();
      const Token& t = t_[i_++];
      e = node(Expr::Kind::kUnary, t.line);
      e->name = t.value;
      e->a = parse_unary(false);
    } else {
      e = parse_postfix(parse_primary());
    }
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case T::kName: {
        ++i_;
        if (t.value == "true" || t.value == "True") return literal(Value(true), t.line);
        if (t.value == "false" || t.value == "False") return literal(Value(false), t.line);
        if (t.value == "none" || t.value == "None") return literal(Value::none(), t.line);
        auto e = node(Expr::Kind::kName, t.line);
        e->name = t.value;
        return e;
      }
      case T::kString: {
        std::string s;
        const int line = t.line;
        while (cur().type == T::kString) s += t_[i_++].value;
        return literal(Value(std::move(s)), line);
      }
      case T::kInt:
        ++i_;
        try {
          return literal(Value(static_cast<std::int64_t>(std::stoll(t.value))), t.line);
        } catch (const std::exception&) {
          error("integer literal " + t.value + " is out of range", t.line);
        }
      case T::kFloat: ++i_; return literal(Value(std::strtod(t.value.c_str(), nullptr)), t.line);  // 1e999 is inf, as in Python
      case T::kOperator:
        if (t.value == "(") {
          ++i_;
          if (accept_op(")")) return tuple_of({}, t.line);
          ExprPtr first = parse_expression();
          if (accept_op(")")) return first;
          std::vector<ExprPtr> items;
          items.push_back(std::move(first));
          while (accept_op(",")) {
            if (is_op(")")) break;
            items.push_back(parse_expression());
          }
          expect_op(")");
          return tuple_of(std::move(items), t.line);
        }
        if (t.value == "[") {
          ++i_;
          auto e = node(Expr::Kind::kList, t.line);
          while (!accept_op("]")) {
            if (!e->items.empty()) expect_op(",");
            if (accept_op("]")) break;
            e->items.push_back(parse_expression());
          }
          return e;
        }
        if (t.value == "{") {
          ++i_;
          auto e = node(Expr::Kind::kDict, t.line);
          while (!accept_op("}")) {
            if (!e->items.empty()) expect_op(",");
            if (accept_op("}")) break;
            e->items.push_back(parse_expression());
            expect_op(":");
            e->items.push_back(parse_expression());
          }
          return e;
        }
        break;
      default: break;
    }
    error("unexpected " + describe(t));
  }

  ExprPtr literal(Value v, int line) {
    auto e = node(Expr::Kind::kLiteral, line);
    e->value = std::move(v);
    return e;
  }

  ExprPtr tuple_of(std::vector<ExprPtr> items, int line) {
    auto e = node(Expr::Kind::kTuple, line);
    e->items = std::move(items);
    return e;
  }

  ExprPtr parse_postfix(ExprPtr e) {
    Levels levels(*this);
    while (true) {
      if (!is_op(".") && !is_op("[") && !is_op("(")) return e;
      levels.add();
      const int line = cur().line;
      if (accept_op(".")) {
        if (cur().type == T::kInt) {
          auto item = node(Expr::Kind::kItem, line);
          item->a = std::move(e);
          const Token& index = t_[i_++];
          try {
            item->b = literal(Value(static_cast<std::int64_t>(std::stoll(index.value))), line);
          } catch (const std::exception&) {
            error("integer literal " + index.value + " is out of range", line);
          }
          e = std::move(item);
        } else {
          auto attr = node(Expr::Kind::kAttr, line);
          attr->a = std::move(e);
          attr->name = expect_name();
          e = std::move(attr);
        }
      } else if (accept_op("[")) {
        e = parse_subscript(std::move(e), line);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool slice = false;
    while (!is_op("]")) {
      if (accept_op(":")) {
        slice = true;
        if (++part > 2) error("a slice has at most three parts");
        continue;
      }
      if (parts[part]) error("expected ':' or ']', got " + describe(cur()));
      parts[part] = parse_expression();
    }
    expect_op("]");
    if (!slice) {
      if (!parts[0]) error("empty subscript", line);
      auto item = node(Expr::Kind::kItem, line);
      item->a = std::move(target);
      item->b = std::move(parts[0]);
      return item;
    }
    auto s = node(Expr::Kind::kSlice, line);
    s->a = std::move(target);
    for (auto& p : parts) s->items.push_back(std::move(p));
    return s;
  }

  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!accept_op(")")) {
      if (!first) {
        expect_op(",");
        if (accept_op(")")) break;
      }
      first = false;
      // jinja2's order: positional arguments, then keywords and one *iterable, then one **mapping.
      if (accept_op("*")) {
        if (e.b || e.c) error("*arguments after *arguments or **keywords");
        e.b = parse_expression();
      } else if (accept_op("**")) {
        if (e.c) error("**keywords after **keywords");
        e.c = parse_expression();
      } else if (cur().type == T::kName && peek().type == T::kOperator && peek().value == "=") {
        if (e.c) error("a keyword argument follows **keywords");
        std::string key = t_[i_].value;
        i_ += 2;
        e.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!e.kwargs.empty() || e.b || e.c) error("a positional argument follows a keyword argument or *arguments");
        e.items.push_back(parse_expression());
      }
    }
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = node(Expr::Kind::kCall, cur().line);
    e->a = std::move(callee);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr input) {
    auto f = node(Expr::Kind::kFilter, cur().line);
    f->name = expect_name();
    while (is_op(".") && peek().type == T::kName) {
      i_ += 1;
      f->name += '.';
      f->name += expect_name();
    }
    f->a = std::move(input);
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    Levels levels(*this);
    while (true) {
      if (!is_op("|") && !is_name("is") && !is_op("(")) return e;
      levels.add();
      if (accept_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        const int line = t_[i_++].line;
        auto t = node(Expr::Kind::kTest, line);
        t->negated = accept_name("not");
        t->name = expect_name();
        t->a = std::move(e);
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((cur().type == T::kName || cur().type == T::kString || cur().type == T::kInt ||
                    cur().type == T::kFloat || is_op("(") || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) error("you cannot chain multiple tests with 'is'");
          t->items.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int depth_ = 0;  // Levels added and not given back
  const std::string& name_;
};

}  // namespace

std::unique_ptr<Program> parse_template(std::string_view source, const std::string& name, const LexOptions& options) {
  auto program = std::make_unique<Program>();
  program->name = name;
  Parser parser(lex_template(source, name, options), program->name);
  program->body = parser.parse_all();
  return program;
}

}  // namespace staticlm::jinja
