// The real Gemma tokenizer (loaded once): encode the input as text (any bytes, valid UTF-8 or
// not), decode the ids back, and decode ids read from the input bytes (any value, in range or not).
#include <memory>

#include "fuzz_util.h"
#include "text/tokenizer.h"

namespace {
const staticlm::Tokenizer& tokenizer() {
  static const std::unique_ptr<staticlm::Tokenizer> t =
      staticlm::Tokenizer::load(std::string(STATICLM_DEPS_DIR) + "/tokenizer-gemma3/tokenizer.json");
  return *t;
}
}  // namespace

// The 33 MB tokenizer.json is loaded before fuzzing starts (not against the per-input -timeout).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizer();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const Tokenizer& t = tokenizer();
  const std::string in = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] {
    // With and without parsing the special tokens written in the text (/tokenize parse_special).
    const std::vector<int> ids = t.encode(in, size % 2 == 0, size % 3 != 0);
    t.decode(ids);
  });
  std::vector<int> raw;
  for (std::size_t i = 0; i + 4 <= size; i += 4) {
    raw.push_back(static_cast<int>(data[i] | data[i + 1] << 8 | data[i + 2] << 16 | static_cast<unsigned>(data[i + 3]) << 24));
  }
  fuzz::refuse_or_accept([&] { t.decode(raw); });
  return 0;
}
