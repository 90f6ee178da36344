// tokenizer.json itself: a fuzzed (small) tokenizer definition is loaded, then encodes (its
// special tokens parsed and not) and decodes a fixed text.
#include "fuzz_util.h"
#include "json_mutator.h"
#include "text/tokenizer.h"

STATICLM_FUZZ_JSON_MUTATOR

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] {
    const auto t = Tokenizer::from_json(in, "tokenizer.json");
    const char* text = "Hello world, <start_of_turn>user\n 1234 \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80";
    t->decode(t->encode(text, true));
    t->decode(t->encode(text, false, /*parse_special=*/false));
  });
  return 0;
}
