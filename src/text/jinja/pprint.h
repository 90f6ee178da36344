// jinja2's pprint filter: Python's pprint.pformat(value) with its defaults (width 80, indent 1,
// dicts sorted by key): the repr on one line when it fits, otherwise lists, tuples and dicts one
// item per line and long strings cut at whitespace into adjacent literals.
#pragma once

#include <string>

#include "text/jinja/value.h"

namespace staticlm::jinja {

std::string pformat(const Value& v);

}  // namespace staticlm::jinja
