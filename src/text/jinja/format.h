// Python's string formatting as templates use it: `"%s: %d" % (a, b)` / `|format(...)`, and
// `"{} {name}".format(...)`. Conversions %s %r %d %i %f %F %e %g %x %o %c %% with flags, width
// and precision; str.format fields {}, {0}, {name} with an optional simple spec.
#pragma once

#include <string>

#include "text/jinja/value.h"

namespace staticlm::jinja {

// args: a tuple of the values, or a single value (which may be a dict for %(name)s).
std::string percent_format(const std::string& fmt, const Value& args);
std::string brace_format(const std::string& fmt, CallArgs& args);

}  // namespace staticlm::jinja
