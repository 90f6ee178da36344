// --prompt-ids lists: any text, any numbers.
#include "fuzz_util.h"
#include "runtime/generation_defaults.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] { parse_token_ids(in, 262144, "--prompt-ids"); });
  return 0;
}
