// A GBNF grammar (before the first NUL) parsed, then the bytes after it fed to a matcher. Bad
// grammars may only be refused by name; a matcher may only run out of readings by a refusal.
// Held to: where the matcher stops taking bytes short of a whole text, some byte still
// continues (no dead end: alternatives that can never end are dropped at parse), and a text it
// takes whole is taken whole again by a matcher fed its bytes one copy at a time.
#include <cstdlib>

#include "fuzz_util.h"
#include "text/gbnf.h"
#include "text/grammar_matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  const auto parts = fuzz::split(in);
  const std::string_view bytes = parts.second;
  fuzz::refuse_or_accept([&] {
    const auto grammar = std::make_shared<const Grammar>(Grammar::parse(parts.first, "grammar"));
    GrammarMatcher m(grammar);
    GrammarMatcher copied(grammar);
    std::size_t taken = 0;
    while (taken < bytes.size()) {
      GrammarMatcher next = copied;
      if (!next.feed(static_cast<unsigned char>(bytes[taken]))) break;
      if (!m.feed(static_cast<unsigned char>(bytes[taken]))) {
        std::fprintf(stderr, "gbnf fuzz: a copy took byte %zu, the matcher did not\n", taken);
        std::abort();
      }
      copied = next;
      ++taken;
    }
    if (m.complete() != copied.complete()) {
      std::fprintf(stderr, "gbnf fuzz: the matcher and its copies disagree on a whole text\n");
      std::abort();
    }
    if (!m.complete()) {
      bool goes_on = false;
      for (int b = 0; b < 256 && !goes_on; ++b) goes_on = GrammarMatcher(m).feed(static_cast<unsigned char>(b));
      if (!goes_on) {
        std::fprintf(stderr, "gbnf fuzz: a dead end, no byte continues the %zu bytes taken\n", taken);
        std::abort();
      }
    }
  });
  return 0;
}
