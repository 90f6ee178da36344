#include "text/uri_reference.h"

#include <cctype>
#include <optional>

namespace staticlm {
namespace {

// A URI reference's five parts (RFC 3986 section 3); a part that is absent is nullopt, which
// differs from present and empty ("a:" has an empty path, "a:?" an empty query).
struct Parts {
  std::optional<std::string> scheme, authority, query, fragment;
  std::string path;
};

Parts split(std::string_view s) {
  Parts p;
  // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
  std::size_t i = 0;
  if (!s.empty() && std::isalpha(static_cast<unsigned char>(s[0]))) {
    std::size_t j = 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '+' || s[j] == '-' || s[j] == '.')) ++j;
    if (j < s.size() && s[j] == ':') {
      p.scheme = std::string(s.substr(0, j));
      i = j + 1;
    }
  }
  if (s.substr(i, 2) == "//") {
    const std::size_t end = s.find_first_of("/?#", i + 2);
    p.authority = std::string(s.substr(i + 2, end == std::string_view::npos ? std::string_view::npos : end - i - 2));
    i = end == std::string_view::npos ? s.size() : end;
  }
  const std::size_t path_end = std::min(s.find_first_of("?#", i), s.size());
  p.path = std::string(s.substr(i, path_end - i));
  i = path_end;
  if (i < s.size() && s[i] == '?') {
    const std::size_t end = std::min(s.find('#', i), s.size());
    p.query = std::string(s.substr(i + 1, end - i - 1));
    i = end;
  }
  if (i < s.size() && s[i] == '#') p.fragment = std::string(s.substr(i + 1));
  return p;
}

// RFC 3986 section 5.2.4's steps, for a path that begins with "/".
std::string remove_absolute_dot_segments(std::string in) {
  std::string out;
  while (!in.empty()) {
    if (in.rfind("../", 0) == 0) {
      in.erase(0, 3);
    } else if (in.rfind("./", 0) == 0) {
      in.erase(0, 2);
    } else if (in.rfind("/./", 0) == 0) {
      in.erase(0, 2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.rfind("/../", 0) == 0 || in == "/..") {
      in = in == "/.." ? "/" : in.substr(3);
      const std::size_t last = out.rfind('/');
      out.erase(last == std::string::npos ? 0 : last);
    } else if (in == "." || in == "..") {
      in.clear();
    } else {
      const std::size_t next = in.find('/', in[0] == '/' ? 1 : 0);
      out += in.substr(0, next);
      in.erase(0, next == std::string::npos ? in.size() : next);
    }
  }
  return out;
}

// RFC 3986 section 5.2.4: "." and ".." segments taken out of a path. A relative path (a
// document without a base URI) is read as if it began with "/", which is then taken off, so
// "a/../b.json" is "b.json" (the RFC's steps, written for absolute paths, would give "/b.json").
std::string remove_dot_segments(std::string in) {
  const bool relative = !in.empty() && in[0] != '/';
  if (relative) in.insert(0, "/");
  std::string out = remove_absolute_dot_segments(std::move(in));
  if (relative && !out.empty()) out.erase(0, 1);
  return out;
}

// RFC 3986 section 5.2.3: a relative path read in the base's directory.
std::string merge(const Parts& base, const std::string& path) {
  if (base.authority && base.path.empty()) return "/" + path;
  const std::size_t last = base.path.rfind('/');
  return last == std::string::npos ? path : base.path.substr(0, last + 1) + path;
}

// RFC 3986 section 5.3.
std::string join(const Parts& p) {
  std::string s;
  if (p.scheme) s += *p.scheme + ":";
  if (p.authority) s += "//" + *p.authority;
  s += p.path;
  if (p.query) s += "?" + *p.query;
  if (p.fragment) s += "#" + *p.fragment;
  return s;
}

}  // namespace

std::string resolve_uri(std::string_view base, std::string_view reference) {
  const Parts r = split(reference);
  const Parts b = split(base);
  Parts t;
  if (r.scheme) {
    t = r;
    t.path = remove_dot_segments(r.path);
  } else {
    t.scheme = b.scheme;
    if (r.authority) {
      t.authority = r.authority;
      t.path = remove_dot_segments(r.path);
      t.query = r.query;
    } else {
      t.authority = b.authority;
      if (r.path.empty()) {
        t.path = b.path;
        t.query = r.query ? r.query : b.query;
      } else {
        t.path = remove_dot_segments(r.path[0] == '/' ? r.path : merge(b, r.path));
        t.query = r.query;
      }
    }
  }
  t.fragment = r.fragment;
  return join(t);
}

std::string uri_without_fragment(std::string_view uri) { return std::string(uri.substr(0, uri.find('#'))); }

std::string uri_fragment(std::string_view uri) {
  const std::size_t at = uri.find('#');
  return at == std::string_view::npos ? std::string() : std::string(uri.substr(at + 1));
}

}  // namespace staticlm
