// A JSON Schema (before the first NUL) compiled for constrained generation, then the bytes after
// it fed to the matcher. Besides refusing bad schemas by name only, the matcher is held to a
// reference: a text it takes whole as a complete value must parse as JSON with nlohmann's parser
// (constrained generation must never produce invalid JSON), and when the schema is one object
// whose minimum / maximum / exclusiveMinimum / exclusiveMaximum are numbers, a number it takes
// whole must parse to a double within them, and a string it takes whole must match the object's
// pattern when checked whole, within its minLength / maxLength; a mismatch aborts. And where it
// stops taking bytes short of a whole value, some byte must still continue (no dead end).
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "text/json_matcher.h"
#include "text/json_pattern.h"
#include "text/json_schema.h"
#include "text/utf8.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  const auto parts = fuzz::split(in);
  const std::string_view schema_text = parts.first, bytes = parts.second;
  fuzz::refuse_or_accept([&] {
    const JsonSchema schema = JsonSchema::parse(schema_text, "json_schema");
    JsonMatcher m(schema);
    std::size_t taken = 0;
    while (taken < bytes.size() && m.feed(static_cast<unsigned char>(bytes[taken]))) ++taken;
    // Where it stopped, some byte goes on unless the value is whole: generation never reaches a
    // prefix no token continues.
    JsonMatcher at(schema);  // m after its refused byte is not to be fed again: the bytes replayed
    for (std::size_t i = 0; i < taken; ++i) at.feed(static_cast<unsigned char>(bytes[i]));
    if (!at.complete()) {
      bool goes_on = false;
      for (int b = 0; b < 256 && !goes_on; ++b) goes_on = JsonMatcher(at).feed(static_cast<unsigned char>(b));
      if (!goes_on) {
        std::fprintf(stderr, "json_schema fuzz: a dead end, no byte continues the %zu bytes taken\n", taken);
        std::abort();
      }
    }
    if (taken == bytes.size() && m.complete() && !nlohmann::json::accept(bytes)) {
      std::fprintf(stderr, "json_schema fuzz: the matcher took invalid JSON whole\n");
      std::abort();
    }
    if (taken == bytes.size() && m.complete()) {
      const nlohmann::json s = nlohmann::json::parse(schema_text, nullptr, false);
      const nlohmann::json v = nlohmann::json::parse(bytes, nullptr, false);
      // A string taken whole matches the pattern as a whole-string check sees it (the matcher
      // decodes escapes and UTF-8 on the way; the check decodes nothing), within its lengths.
      if (s.is_object() && v.is_string() && s.contains("pattern") && s["pattern"].is_string()) {
        const std::string text = v.get<std::string>();
        const JsonPattern p = JsonPattern::compile(s["pattern"].get<std::string>(), "pattern");
        const auto length = static_cast<std::int64_t>(utf8_length(text));
        const bool short_ok = !s.contains("minLength") || !s["minLength"].is_number_integer() || length >= s["minLength"].get<std::int64_t>();
        const bool long_ok = !s.contains("maxLength") || !s["maxLength"].is_number_integer() || length <= s["maxLength"].get<std::int64_t>();
        if (!p.matches(text) || !short_ok || !long_ok) {
          std::fprintf(stderr, "json_schema fuzz: the matcher took a string its pattern or lengths refuse\n");
          std::abort();
        }
      }
      if (s.is_object() && v.is_number()) {
        const double x = v.get<double>();
        const auto bound = [&](const char* key, auto holds) {
          const auto it = s.find(key);
          if (it != s.end() && it->is_number() && !holds(x, it->get<double>())) {
            std::fprintf(stderr, "json_schema fuzz: %s %s broken by a number the matcher took whole\n", key,
                         it->dump().c_str());
            std::abort();
          }
        };
        bound("minimum", [](double a, double b) { return a >= b; });
        bound("maximum", [](double a, double b) { return a <= b; });
        bound("exclusiveMinimum", [](double a, double b) { return a > b; });
        bound("exclusiveMaximum", [](double a, double b) { return a < b; });
      }
    }
  });
  return 0;
}
