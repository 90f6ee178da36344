#include "text/jinja/template.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "text/jinja/builtins.h"
#include "text/jinja/limits.h"
#include "text/jinja/parser.h"
#include "text/utf8.h"

namespace staticlm::jinja {
namespace {

// Variables of one scope; lookups walk to the parent. A for-loop iteration, a macro call and a
// with block each get a child scope (so `set` inside them does not leak, as in jinja2).
struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

enum class Flow { kNormal, kBreak, kContinue };

// Walks the tree once to check that every filter and test exists, as jinja2 does when it
// compiles a template, except where jinja2 defers the check to the call (a "soft" frame): in an
// if statement's conditions and branches (not inside a loop, macro, call or filter block nested
// there) and in an inline `a if b else c`. There an unknown name fails only when it is used.
void check_names(const Expr* e, const std::string& name, bool soft) {
  if (e == nullptr) return;
  soft = soft || e->kind == Expr::Kind::kTernary;
  if (!soft && e->kind == Expr::Kind::kFilter && !has_filter(e->name)) fail_at(name, e->line, "no filter named '" + e->name + "'");
  if (!soft && e->kind == Expr::Kind::kTest && !has_test(e->name)) fail_at(name, e->line, "no test named '" + e->name + "'");
  check_names(e->a.get(), name, soft);
  check_names(e->b.get(), name, soft);
  check_names(e->c.get(), name, soft);
  for (const auto& i : e->items) check_names(i.get(), name, soft);
  for (const auto& kw : e->kwargs) check_names(kw.second.get(), name, soft);
}

void check_names(const StmtList& body, const std::string& name, bool soft) {
  for (const auto& s : body) {
    const bool branch = s->kind == Stmt::Kind::kIf;
    // What a statement evaluates in its own place (an output, a set, a loop's iterable, a
    // call's arguments) shares the enclosing frame; a loop's, macro's or block's body does not.
    check_names(s->expr.get(), name, soft);
    check_names(s->cond.get(), name, branch && soft);
    for (const auto& c : s->conditions) check_names(c.get(), name, branch || soft);
    for (const auto& b : s->bodies) check_names(b, name, branch);
    for (const auto& p : s->params) check_names(p.default_value.get(), name, false);
    for (const auto& f : s->filters) check_names(f.get(), name, false);
    for (const auto& a : s->assignments) check_names(a.second.get(), name, soft);
  }
}

class Renderer {
 public:
  Renderer(const Program& p, std::int64_t max_steps) : p_(p), budget_(max_steps) {}
  // A macro holds its defining scope, which holds the macro: the cycle is broken here, when the
  // render is over (else every render with a macro leaks its scopes).
  ~Renderer() {
    for (const ScopePtr& s : macro_scopes_) s->vars.clear();
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  std::string run(const ScopePtr& root) {
    std::string out;
    try {
      if (exec(p_.body, root, out) != Flow::kNormal) fail("break or continue outside a loop");
    } catch (const TemplateError& e) {
      fail_at(p_.name, line_, e.message);
    } catch (const Error&) {
      throw;  // already names its file
    } catch (const std::bad_alloc&) {
      fail_at(p_.name, line_, "out of memory while rendering");
    } catch (const std::exception& e) {
      // A standard-library refusal (a number out of range, a string too long) inside a built-in.
      fail_at(p_.name, line_, e.what());
    }
    return out;
  }

 private:
  // Keeps line_ on the node being evaluated; restored when it is done, but not while an error
  // unwinds (so the error names the innermost node's line).
  struct LineGuard {
    LineGuard(int& line, int now) : line_(line), saved_(line), unwinding_(std::uncaught_exceptions()) { line = now; }
    ~LineGuard() {
      if (std::uncaught_exceptions() == unwinding_) line_ = saved_;
    }
    int& line_;
    int saved_;
    int unwinding_;
  };

  // One level of evaluation: counts a step and bounds the C++ recursion that evaluating nested
  // expressions, statements and macro calls is.
  struct DepthGuard {
    DepthGuard(Renderer& r, int line) : r_(r), line_(r.line_, line) {
      r.budget_.step();
      if (++r_.depth_ > kMaxEvalDepth) {
        fail("expressions and statements nested more than " + std::to_string(kMaxEvalDepth) + " deep while rendering (the limit)");
      }
    }
    ~DepthGuard() { --r_.depth_; }
    Renderer& r_;
    LineGuard line_;
  };

  // Output grows only through here, so the limit on one string holds for it too.
  static void append(std::string& out, const std::string& piece) {
    check_string_size(out.size() + piece.size(), "the template's output", piece.size());
    out += piece;
  }

  Flow exec(const StmtList& body, const ScopePtr& scope, std::string& out) {
    for (const auto& s : body) {
      const Flow f = exec(*s, scope, out);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  void assign(const std::vector<std::string>& targets, const Value& v, Scope& scope) {
    if (targets.size() == 1) {
      scope.vars[targets[0]] = v;
      return;
    }
    if (!v.is_list() && !v.is_string()) fail("cannot unpack " + v.type_name() + " into " + std::to_string(targets.size()) + " names");
    const std::vector<Value> items = v.iterate();
    if (items.size() != targets.size()) {
      fail("cannot unpack " + std::to_string(items.size()) + " values into " + std::to_string(targets.size()) + " names");
    }
    for (std::size_t i = 0; i < targets.size(); ++i) scope.vars[targets[i]] = items[i];
  }

  Value apply_filters(const std::vector<ExprPtr>& filters, Value v, const ScopePtr& scope) {
    for (const auto& f : filters) v = filter(*f, std::move(v), scope);
    return v;
  }

  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
    DepthGuard g(*this, s.line);
    switch (s.kind) {
      case Stmt::Kind::kText: append(out, s.text); return Flow::kNormal;
      case Stmt::Kind::kOutput: append(out, eval(*s.expr, scope).str()); return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (std::size_t i = 0; i < s.bodies.size(); ++i) {
          if (i >= s.conditions.size() || eval(*s.conditions[i], scope).truthy()) return exec(s.bodies[i], scope, out);
        }
        return Flow::kNormal;
      case Stmt::Kind::kFor: return exec_for(s, scope, out);
      case Stmt::Kind::kSet: {
        const Value v = eval(*s.expr, scope);
        if (s.attr.empty()) {
          assign(s.targets, v, *scope);
          return Flow::kNormal;
        }
        const Value* ns = scope->lookup(s.targets[0]);
        if (ns == nullptr || !ns->is_dict() || !ns->dict_object().is_namespace) {
          fail("cannot assign attribute on non-namespace object '" + s.targets[0] + "'");
        }
        ns->dict_object().set(Value(s.attr), v);
        return Flow::kNormal;
      }
      case Stmt::Kind::kSetBlock: {
        // A break or continue in the body leaves the enclosing loop at once, as in jinja2's
        // generated code: nothing is assigned and the body's text is dropped.
        std::string body;
        if (const Flow f = exec(s.bodies[0], scope, body); f != Flow::kNormal) return f;
        assign(s.targets, apply_filters(s.filters, Value(body), scope), *scope);
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: scope->vars[s.text] = make_macro(s, scope, Value()); return Flow::kNormal;
      case Stmt::Kind::kCallBlock: {
        const Value caller = make_macro(s, scope, Value(), "caller");
        const Expr& call = *s.expr;
        const Value fn = eval(*call.a, scope);
        CallArgs args = eval_args(call, scope);
        args.keyword.emplace_back("caller", caller);
        append(out, invoke(fn, args, call).str());
        return Flow::kNormal;
      }
      case Stmt::Kind::kFilterBlock: {
        std::string body;
        if (const Flow f = exec(s.bodies[0], scope, body); f != Flow::kNormal) return f;  // as a set block
        append(out, apply_filters(s.filters, Value(body), scope).str());
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kScope: {
        // A scope of its own even with nothing assigned: a set inside stays inside (jinja2).
        ScopePtr inner = child(scope);
        for (const auto& [name, e] : s.assignments) inner->vars[name] = eval(*e, scope);
        return exec(s.bodies[0], inner, out);
      }
    }
    return Flow::kNormal;
  }

  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
    const Value seq = eval(*s.expr, scope);
    if (!seq.is_undefined() && !seq.is_list() && !seq.is_dict() && !seq.is_string()) {
      fail("'" + seq.type_name() + "' object is not iterable");
    }
    // A generator is read item by item as the loop goes (a loop inside this one may read it on,
    // a break leaves the rest); the items it has left now give loop.length and the others.
    const bool generator = seq.is_generator();
    const std::size_t read_before = seq.items_read();
    std::vector<Value> items =
        generator ? std::vector<Value>(seq.list().begin() + static_cast<std::ptrdiff_t>(read_before), seq.list().end())
                  : seq.iterate();
    check_list_items(items.size(), "for loop");
    std::vector<std::size_t> raw;  // with a condition: each kept item's place among the items
    if (s.cond) {
      std::vector<Value> kept;
      for (std::size_t r = 0; r < items.size(); ++r) {
        ScopePtr probe = child(scope);
        assign(s.targets, items[r], *probe);
        if (eval(*s.cond, probe).truthy()) kept.push_back(items[r]), raw.push_back(r);
      }
      items = std::move(kept);
    }
    const auto n = static_cast<std::int64_t>(items.size());
    // loop.changed(*values): true when the values differ from those of its previous call in this loop.
    auto last_changed = std::make_shared<std::optional<Value>>();
    for (std::int64_t i = 0; i < n; ++i) {
      if (generator) {
        const std::size_t at = read_before + (s.cond ? raw[static_cast<std::size_t>(i)] : static_cast<std::size_t>(i));
        if (seq.items_read() > at) continue;  // read meanwhile, by a loop inside this one
        seq.set_items_read(at + 1);
      }
      // A round makes a scope and the loop object: it counts as kLoopRoundSteps steps.
      budget_.step(kLoopRoundSteps);
      ScopePtr it = child(scope);
      assign(s.targets, items[static_cast<std::size_t>(i)], *it);
      Value loop = Value::dict();
      DictObject& d = loop.dict_object();
      // Distinct keys of flat values: appended without set()'s search for an existing key.
      d.items.reserve(12);
      for (auto& [key, value] : std::initializer_list<std::pair<const char*, Value>>{
               {"index", Value(i + 1)}, {"index0", Value(i)}, {"revindex", Value(n - i)}, {"revindex0", Value(n - i - 1)},
               {"first", Value(i == 0)}, {"last", Value(i == n - 1)}, {"length", Value(n)}, {"depth", Value(1)},
               {"depth0", Value(0)}}) {
        d.items.emplace_back(Value(key), value);
      }
      if (i > 0) d.set(Value("previtem"), items[static_cast<std::size_t>(i - 1)]);
      if (i + 1 < n) d.set(Value("nextitem"), items[static_cast<std::size_t>(i + 1)]);
      d.set(Value("cycle"), Value::function("cycle", [i](CallArgs& c) {
        if (c.positional.empty()) fail("no items for cycling given");
        return c.positional[static_cast<std::size_t>(i) % c.positional.size()];
      }));
      d.set(Value("changed"), Value::function("changed", [last_changed](CallArgs& c) {
        Value now(c.positional, true);
        if (*last_changed && values_equal(**last_changed, now)) return Value(false);
        *last_changed = std::move(now);
        return Value(true);
      }));
      it->vars["loop"] = loop;
      if (exec(s.bodies[0], it, out) == Flow::kBreak) return Flow::kNormal;  // a generator read up to here
    }
    if (generator) seq.set_items_read(seq.list().size());  // to its end, the items the condition left out too
    if (n == 0 && s.bodies.size() > 1) return exec(s.bodies[1], scope, out);
    return Flow::kNormal;
  }

  // Whether an expression or statements read the variable `name` anywhere (nested macros included,
  // as jinja2's scan for a macro's `varargs` and `kwargs` goes).
  static bool reads(const Expr* e, const std::string& name) {
    if (e == nullptr) return false;
    if (e->kind == Expr::Kind::kName && e->name == name) return true;
    if (reads(e->a.get(), name) || reads(e->b.get(), name) || reads(e->c.get(), name)) return true;
    for (const auto& x : e->items) if (reads(x.get(), name)) return true;
    for (const auto& [k, x] : e->kwargs) if (reads(x.get(), name)) return true;
    return false;
  }
  static bool reads(const StmtList& body, const std::string& name) {
    for (const auto& st : body) {
      if (reads(st->expr.get(), name) || reads(st->cond.get(), name)) return true;
      for (const auto& x : st->conditions) if (reads(x.get(), name)) return true;
      for (const auto& x : st->filters) if (reads(x.get(), name)) return true;
      for (const auto& [k, x] : st->assignments) if (reads(x.get(), name)) return true;
      for (const auto& p : st->params) if (reads(p.default_value.get(), name)) return true;
      for (const auto& b : st->bodies) if (reads(b, name)) return true;
    }
    return false;
  }

  Value make_macro(const Stmt& s, const ScopePtr& scope, const Value&, const std::string& name = "") {
    const Stmt* def = &s;
    macro_scopes_.push_back(scope);
    // jinja2 takes extra positional arguments (keyword ones) only into a macro that reads varargs
    // (kwargs); otherwise the call is a TypeError.
    const bool takes_varargs = reads(s.bodies[0], "varargs"), takes_kwargs = reads(s.bodies[0], "kwargs"),
               takes_caller = reads(s.bodies[0], "caller");
    return Value::function(name.empty() ? s.text : name,
                           [this, def, scope, takes_varargs, takes_kwargs, takes_caller](CallArgs& c) {
      if (calls_ >= kMaxCallDepth) {
        fail("macro '" + def->text + "': more than " + std::to_string(kMaxCallDepth) + " macro calls inside each other (the limit)");
      }
      ++calls_;
      struct Leave {
        int& calls;
        ~Leave() { --calls; }
      } leave{calls_};
      ScopePtr local = child(scope);
      // jinja2's Macro.__call__: positional arguments, then parameters by keyword, then caller
      // (taken when the body reads it), then the rest into kwargs or a TypeError, then varargs.
      const std::size_t n_pos = std::min(c.positional.size(), def->params.size());
      for (std::size_t i = 0; i < n_pos; ++i) local->vars[def->params[i].name] = c.positional[i];
      std::vector<std::pair<std::string, Value>> rest;
      for (const auto& [k, v] : c.keyword) {
        const std::string& key = k;  // clang 14 cannot capture a structured binding
        const auto at = std::find_if(def->params.begin(), def->params.end(), [&](const MacroParam& p) { return p.name == key; });
        // A parameter not already filled by position; one given twice is left over.
        const bool param = at != def->params.end() && static_cast<std::size_t>(at - def->params.begin()) >= n_pos;
        if (param || (k == "caller" && takes_caller)) local->vars[k] = v;
        else rest.emplace_back(k, v);
      }
      Value kwargs = Value::dict();
      if (takes_kwargs) {
        for (auto& [k, v] : rest) kwargs.dict_object().set(Value(k), v);
      } else if (!rest.empty()) {
        const bool caller = std::any_of(rest.begin(), rest.end(), [](const auto& kv) { return kv.first == "caller"; });
        if (caller) {
          fail("macro '" + def->text + "' was invoked with two values for the special caller argument. This is most likely a bug.");
        }
        fail("macro '" + def->text + "' takes no keyword argument '" + rest.front().first + "'");
      }
      if (c.positional.size() > def->params.size() && !takes_varargs) {
        fail("macro '" + def->text + "' takes not more than " + std::to_string(def->params.size()) + " argument(s)");
      }
      std::vector<Value> extra(c.positional.begin() + static_cast<std::ptrdiff_t>(n_pos), c.positional.end());
      for (const MacroParam& p : def->params) {
        if (local->vars.count(p.name)) continue;
        local->vars[p.name] = p.default_value ? eval(*p.default_value, local)
                                              : Value::undefined("parameter '" + p.name + "' was not provided");
      }
      local->vars["varargs"] = Value(std::move(extra), true);
      local->vars["kwargs"] = kwargs;
      std::string out;
      exec(def->bodies[0], local, out);
      return Value(std::move(out));
    }, name == "caller" ? "<Macro anonymous>" : "<Macro '" + (name.empty() ? s.text : name) + "'>");  // jinja2's repr
  }

  // A call's arguments: positional ones, then the items of *b; keywords, then those of **c (b
  // and c are set only in calls that spread an iterable or a mapping).
  CallArgs eval_args(const Expr& e, const ScopePtr& scope) {
    CallArgs args;
    for (const auto& a : e.items) args.positional.push_back(eval(*a, scope));
    if (e.b) {
      const Value spread = eval(*e.b, scope);
      require_defined(spread);
      if (!spread.is_list() && !spread.is_string() && !spread.is_dict()) {
        fail("argument after * must be an iterable, not " + spread.type_name());
      }
      for (Value& v : spread.iterate()) args.positional.push_back(std::move(v));
    }
    for (const auto& [k, v] : e.kwargs) args.keyword.emplace_back(k, eval(*v, scope));
    if (e.c) {
      const Value spread = eval(*e.c, scope);
      require_defined(spread);
      if (!spread.is_dict()) fail("argument after ** must be a mapping, not " + spread.type_name());
      for (const auto& [k, v] : spread.dict_object().items) {
        if (!k.is_string()) fail("keywords must be strings");
        const std::string key = k.as_string();
        if (std::any_of(args.keyword.begin(), args.keyword.end(), [&](const auto& kv) { return kv.first == key; })) {
          fail("got multiple values for keyword argument '" + key + "'");
        }
        args.keyword.emplace_back(key, v);
      }
    }
    return args;
  }

  Value invoke(const Value& fn, CallArgs& args, const Expr& e) {
    if (fn.is_undefined()) fail(fn.undefined_hint());
    if (!fn.is_callable()) fail("'" + fn.type_name() + "' object is not callable");
    (void)e;
    return checked_result(fn.callable().fn(args), fn.callable().name.c_str());
  }

  // What a built-in or macro returned, against the size limits (their arguments were checked
  // where a size comes from a number, e.g. a width; this catches what grows from the input).
  // A list is only counted: filters such as selectattr or map return items that exist already,
  // and templates call them inside loops over the messages.
  static Value checked_result(Value v, const char* what) {
    if (v.is_string()) check_string_size(v.as_string().size(), what);
    else if (v.is_list()) check_list_items(v.list().size(), what);
    return v;
  }

  Value filter(const Expr& f, Value input, const ScopePtr& scope) {
    LineGuard g(line_, f.line);
    CallArgs args = eval_args(f, scope);
    return checked_result(apply_filter(f.name, input, args), f.name.c_str());
  }

  Value eval(const Expr& e, const ScopePtr& scope) {
    DepthGuard g(*this, e.line);
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        const Value* v = scope->lookup(e.name);
        return v != nullptr ? *v : Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        std::vector<Value> items;
        for (const auto& i : e.items) items.push_back(eval(*i, scope));
        return Value(std::move(items), e.kind == Expr::Kind::kTuple);
      }
      case Expr::Kind::kDict: {
        Value d = Value::dict();
        for (std::size_t i = 0; i + 1 < e.items.size(); i += 2) d.dict_object().set(eval(*e.items[i], scope), eval(*e.items[i + 1], scope));
        return d;
      }
      case Expr::Kind::kUnary: {
        const Value v = eval(*e.a, scope);
        if (e.name == "not") return Value(!v.truthy());
        require_defined(v);
        if (!v.is_number()) fail("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v.is_float() ? v : Value(v.as_int());
        return v.is_float() ? Value(-v.as_double()) : Value(checked_int("-", 0, v.as_int()));
      }
      case Expr::Kind::kBinary: {
        const Value a = eval(*e.a, scope);
        if (e.name == "and") return a.truthy() ? eval(*e.b, scope) : a;
        if (e.name == "or") return a.truthy() ? a : eval(*e.b, scope);
        return binary_op(e.name, a, eval(*e.b, scope));
      }
      case Expr::Kind::kCompare: {
        Value left = eval(*e.a, scope);
        for (std::size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.items[i], scope);
          const std::string& op = e.ops[i];
          bool ok;
          if (op == "==") ok = values_equal(left, right);
          else if (op == "!=") ok = !values_equal(left, right);
          else if (op == "<") ok = values_less(left, right);
          else if (op == ">") ok = values_less(right, left);
          else if (op == "<=") ok = !values_less(right, left);
          else if (op == ">=") ok = !values_less(left, right);
          else if (op == "in") ok = contains(right, left);
          else ok = !contains(right, left);
          if (!ok) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::kTernary:
        if (eval(*e.b, scope).truthy()) return eval(*e.a, scope);
        return e.c ? eval(*e.c, scope) : Value::undefined("the inline if expression was false and has no else");
      case Expr::Kind::kAttr: return get_attr(eval(*e.a, scope), e.name);
      case Expr::Kind::kItem: {
        const Value obj = eval(*e.a, scope);
        return get_item(obj, eval(*e.b, scope));
      }
      case Expr::Kind::kSlice: {
        const Value obj = eval(*e.a, scope);
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.items[static_cast<std::size_t>(i)]) parts[i] = eval(*e.items[static_cast<std::size_t>(i)], scope);
        }
        return slice_value(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::kCall: {
        const Value fn = eval(*e.a, scope);
        CallArgs args = eval_args(e, scope);
        return invoke(fn, args, e);
      }
      case Expr::Kind::kFilter: return filter(e, eval(*e.a, scope), scope);
      case Expr::Kind::kTest: {
        const Value v = eval(*e.a, scope);
        CallArgs args = eval_args(e, scope);
        return Value(apply_test(e.name, v, args) != e.negated);
      }
    }
    return Value();
  }

  const Program& p_;
  std::vector<ScopePtr> macro_scopes_;  // scopes macros were defined in (see ~Renderer)
  RenderBudget budget_;                 // this render's steps and built bytes (thread-current while it lives)
  int line_ = 0;
  int depth_ = 0;  // DepthGuards alive
  int calls_ = 0;  // macro calls running
};

std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm out{};
  localtime_r(&t, &out);
  return out;
}

}  // namespace

std::unique_ptr<Template> Template::parse(std::string_view source, std::string name, const LexOptions& lex) {
  // jinja2 gets the template as text (transformers decodes the file): bytes that are not UTF-8
  // are refused here, so every string the engine handles is valid UTF-8.
  if (const std::size_t bad = utf8_first_invalid(source); bad != std::string_view::npos) {
    const auto line = 1 + std::count(source.begin(), source.begin() + static_cast<std::ptrdiff_t>(bad), '\n');
    fail_at(name, static_cast<int>(line), "not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  std::unique_ptr<Program> program;
  try {
    program = parse_template(source, name, lex);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A standard-library refusal the parser did not foresee: still the template's fault.
    fail_at(name, 0, std::string("cannot parse: ") + e.what());
  }
  check_names(program->body, program->name, false);
  return std::unique_ptr<Template>(new Template(std::move(program)));
}

std::string Template::render(const Value& variables, const RenderOptions& options) const {
  auto globals = std::make_shared<Scope>();
  const Value g = make_globals(options.now ? options.now : local_now);
  for (const auto& [k, v] : g.dict_object().items) globals->vars[k.as_string()] = v;
  ScopePtr root = child(globals);
  // The items of messages, tools and documents: the step limit grows with them (other variables,
  // a request's chat_template_kwargs among them, do not raise it).
  std::int64_t items = 0;
  if (variables.is_dict()) {
    for (const auto& [k, v] : variables.dict_object().items) {
      const std::string name = k.str();
      root->vars[name] = v;
      if (v.is_list() && (name == "messages" || name == "tools" || name == "documents")) {
        items += static_cast<std::int64_t>(v.list().size());
      }
    }
  }
  return Renderer(*program_, max_render_steps(items)).run(root);
}

std::string Template::render(const nlohmann::ordered_json& variables, const RenderOptions& options) const {
  Value v;
  try {
    v = Value::from_json(variables);
  } catch (const TemplateError& e) {  // a value the engine cannot hold, e.g. an integer past 64 bits
    invalid_argument("chat template variables (messages, tools, --var): " + e.message);
  }
  return render(v, options);
}

}  // namespace staticlm::jinja
