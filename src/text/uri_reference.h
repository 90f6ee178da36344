// URI references resolved against a base URI (RFC 3986 section 5.2), for JSON Schema's "$id" and
// "$ref": a schema names itself and the schemas it refers to by URIs relative to the resource
// around it. Only strings: nothing is fetched.
#pragma once

#include <string>
#include <string_view>

namespace staticlm {

// The target URI of `reference` read against `base` (an absolute URI, or "" for a document
// without one, where a relative reference stays relative, its dot segments removed).
std::string resolve_uri(std::string_view base, std::string_view reference);

// `uri` without its fragment ("#..."), and the fragment alone (without '#'; "" when none).
std::string uri_without_fragment(std::string_view uri);
std::string uri_fragment(std::string_view uri);

}  // namespace staticlm
