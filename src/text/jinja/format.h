// Python's string formatting as templates use it: `"%s: %d" % (a, b)` / `|format(...)`, and
// `"{} {name}".format(...)`. Conversions %s %r %d %i %f %F %e %g %x %o %c %% with flags, width
// and precision; str.format fields {}, {0}, {name}, {0.attr}, {0[key]}, !r / !s / !a, and a
// format spec (text/jinja/format_spec.h), which may hold fields itself ("{:>{}}").
#pragma once

#include <string>

#include "text/jinja/value.h"

namespace staticlm::jinja {

// args: a tuple of the values, or a single value (which may be a dict for %(name)s).
// escape: markupsafe's Markup % args / Markup.format(...): what each %s / %r / field writes is
// HTML-escaped (before a precision cuts it), unless the value is Markup itself.
std::string percent_format(const std::string& fmt, const Value& args, bool escape = false);
std::string brace_format(const std::string& fmt, CallArgs& args, bool escape = false);

}  // namespace staticlm::jinja
