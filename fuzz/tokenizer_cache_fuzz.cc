// The tokenizer cache's payload (text/tokenizer_cache.h): fuzzed bytes behind a valid header (so
// that the fuzzer works on the payload, not on its checksum) are refused, or give a tokenizer
// that encodes and decodes a fixed text without reading out of bounds.
#include "fuzz_util.h"
#include "text/tokenizer.h"
#include "text/tokenizer_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  static constexpr std::string_view kJson = "{}";  // any bytes: the header holds only their hash
  const std::string bytes =
      tokenizer_cache_with_header(tokenizer_cache_key(kJson), std::string_view(reinterpret_cast<const char*>(data), size));
  fuzz::refuse_or_accept([&] {
    const auto t = Tokenizer::from_cache(bytes, kJson, "cache");
    if (t == nullptr) return;
    const std::vector<int> ids = t->encode("Hello world, <start_of_turn>user\n 1234 \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x96\x81\xe2\x96\x81x", true);
    t->decode(ids);
    t->decode(ids, true);
  });
  return 0;
}
