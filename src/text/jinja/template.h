// A Jinja template for chat formats: parsed once, rendered with variables the way transformers'
// apply_chat_template renders it (jinja2 with trim_blocks, lstrip_blocks, loop controls, the
// default Undefined, tojson as json.dumps(ensure_ascii=False), raise_exception, strftime_now).
// docs/chat-templates.md lists the supported subset.
//
//   auto t = jinja::Template::parse(source, "chat_template.jinja");
//   std::string prompt = t->render(vars);   // vars: a JSON object of template variables
//
// Errors (syntax, unknown filter or test, raise_exception, a run-time type error) are staticlm
// Errors of kind kInvalidFile whose one-line message starts "NAME:LINE: ".
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "text/jinja/ast.h"
#include "text/jinja/lexer.h"

namespace staticlm::jinja {

struct RenderOptions {
  // The time strftime_now formats (default: the local time now).
  std::function<std::tm()> now;
};

class Template {
 public:
  // Parses (and checks every filter and test name); throws on a syntax error.
  static std::unique_ptr<Template> parse(std::string_view source, std::string name, const LexOptions& lex = {});

  std::string render(const nlohmann::ordered_json& variables, const RenderOptions& options = {}) const;
  std::string render(const Value& variables, const RenderOptions& options = {}) const;  // a dict

  const std::string& name() const { return program_->name; }

 private:
  explicit Template(std::unique_ptr<Program> program) : program_(std::move(program)) {}
  std::unique_ptr<Program> program_;
};

}  // namespace staticlm::jinja
