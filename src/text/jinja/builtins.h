// jinja2's built-in filters, tests, global functions and the Python methods templates call on
// strings, dicts and lists, with jinja2's (and Python's) results, including for undefined values.
// Errors throw TemplateError (no location; the renderer adds the template line).
#pragma once

#include <ctime>
#include <functional>
#include <optional>
#include <string>

#include "text/jinja/value.h"

namespace staticlm::jinja {

bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& input, CallArgs& args);
bool apply_test(const std::string& name, const Value& input, CallArgs& args);

// jinja2's getattr (attribute, then item; methods are bound callables) and getitem (item, then
// attribute); a miss is undefined, a lookup on an undefined value is an error.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on a list, tuple or string (Python's rules; missing parts are undefined).
Value slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);
// A binary operator: + - * / // % ** ~.
Value binary_op(const std::string& op, const Value& a, const Value& b);
// markupsafe's escape: & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string html_escape(const std::string& s);
// `a in b`.
bool contains(const Value& container, const Value& item);

// The global functions: range, dict, namespace, joiner, cycler, raise_exception and
// strftime_now (which formats `now()`).
Value make_globals(const std::function<std::tm()>& now);

}  // namespace staticlm::jinja
