// A JSON Schema (before the first NUL) compiled for constrained generation, then the bytes after
// it fed to the matcher. Besides refusing bad schemas by name only, the matcher is held to a
// reference: a text it takes whole as a complete value must parse as JSON with nlohmann's parser
// (constrained generation must never produce invalid JSON); a mismatch aborts.
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "text/json_matcher.h"
#include "text/json_schema.h"

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
    if (taken == bytes.size() && m.complete() && !nlohmann::json::accept(bytes)) {
      std::fprintf(stderr, "json_schema fuzz: the matcher took invalid JSON whole\n");
      std::abort();
    }
  });
  return 0;
}
