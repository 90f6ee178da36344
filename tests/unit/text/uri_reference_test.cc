#include "text/uri_reference.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace staticlm {
namespace {

// RFC 3986 section 5.4: every example reference resolved against the RFC's base URI, normal
// and abnormal, with the targets the RFC gives.
TEST(UriReference, ResolvesTheExamplesOfRfc3986) {
  const std::string base = "http://a/b/c/d;p?q";
  const std::vector<std::pair<std::string, std::string>> examples = {
      {"g:h", "g:h"},
      {"g", "http://a/b/c/g"},
      {"./g", "http://a/b/c/g"},
      {"g/", "http://a/b/c/g/"},
      {"/g", "http://a/g"},
      {"//g", "http://g"},
      {"?y", "http://a/b/c/d;p?y"},
      {"g?y", "http://a/b/c/g?y"},
      {"#s", "http://a/b/c/d;p?q#s"},
      {"g#s", "http://a/b/c/g#s"},
      {"g?y#s", "http://a/b/c/g?y#s"},
      {";x", "http://a/b/c/;x"},
      {"g;x", "http://a/b/c/g;x"},
      {"g;x?y#s", "http://a/b/c/g;x?y#s"},
      {"", "http://a/b/c/d;p?q"},
      {".", "http://a/b/c/"},
      {"./", "http://a/b/c/"},
      {"..", "http://a/b/"},
      {"../", "http://a/b/"},
      {"../g", "http://a/b/g"},
      {"../..", "http://a/"},
      {"../../", "http://a/"},
      {"../../g", "http://a/g"},
      // Abnormal examples (section 5.4.2).
      {"../../../g", "http://a/g"},
      {"../../../../g", "http://a/g"},
      {"/./g", "http://a/g"},
      {"/../g", "http://a/g"},
      {"g.", "http://a/b/c/g."},
      {".g", "http://a/b/c/.g"},
      {"g..", "http://a/b/c/g.."},
      {"..g", "http://a/b/c/..g"},
      {"./../g", "http://a/b/g"},
      {"./g/.", "http://a/b/c/g/"},
      {"g/./h", "http://a/b/c/g/h"},
      {"g/../h", "http://a/b/c/h"},
      {"g;x=1/./y", "http://a/b/c/g;x=1/y"},
      {"g;x=1/../y", "http://a/b/c/y"},
      {"g?y/./x", "http://a/b/c/g?y/./x"},
      {"g?y/../x", "http://a/b/c/g?y/../x"},
      {"g#s/./x", "http://a/b/c/g#s/./x"},
      {"g#s/../x", "http://a/b/c/g#s/../x"},
      {"http:g", "http:g"},
  };
  for (const auto& [reference, target] : examples) EXPECT_EQ(resolve_uri(base, reference), target) << reference;
}

// JSON Schema's cases: a document without a base URI keeps relative references relative; URNs
// and fragments; an authority with an empty path.
TEST(UriReference, SchemaIdsAndFragments) {
  EXPECT_EQ(resolve_uri("", "#/$defs/a"), "#/$defs/a");
  EXPECT_EQ(resolve_uri("", "item.json"), "item.json");
  EXPECT_EQ(resolve_uri("", "./a/../b.json#x"), "b.json#x");
  EXPECT_EQ(resolve_uri("urn:example:root", "#/$defs/a"), "urn:example:root#/$defs/a");
  EXPECT_EQ(resolve_uri("urn:example:root", "urn:example:other"), "urn:example:other");
  EXPECT_EQ(resolve_uri("https://example.com", "s.json"), "https://example.com/s.json");
  EXPECT_EQ(resolve_uri("https://example.com/schemas/root.json", "item.json#/$defs/x"), "https://example.com/schemas/item.json#/$defs/x");
  EXPECT_EQ(uri_without_fragment("https://e.com/a.json#/x"), "https://e.com/a.json");
  EXPECT_EQ(uri_fragment("https://e.com/a.json#/x"), "/x");
  EXPECT_EQ(uri_fragment("https://e.com/a.json"), "");
  EXPECT_EQ(uri_fragment("a#"), "");
}

}  // namespace
}  // namespace staticlm
