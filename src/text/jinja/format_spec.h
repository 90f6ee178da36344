// Python's format-spec mini-language, what `format(value, spec)` does for the values a template
// holds (str, int, bool, float): [[fill]align][sign][#][0][width][,|_][.precision][type], as
// str.format applies it to each replacement field ("{:>8}", "{:,.2f}", "{:08.3e}", "{:^10}").
#pragma once

#include <string>

#include "text/jinja/value.h"

namespace staticlm::jinja {

// The value formatted by a non-empty spec; fails with Python's ValueError / TypeError wording
// for a spec the value's type does not take.
std::string format_with_spec(const Value& v, const std::string& spec);

}  // namespace staticlm::jinja
