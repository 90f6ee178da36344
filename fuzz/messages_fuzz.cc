// Chat messages JSON (OpenAI style) through the Gemma 4 chat format.
#include "fuzz_util.h"
#include "json_mutator.h"
#include "text/chat_format.h"

STATICLM_FUZZ_JSON_MUTATOR

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace staticlm;
  const std::string in = fuzz::text(data, size);
  fuzz::refuse_or_accept([&] {
    const auto messages = parse_chat_messages_json(in, "messages.json");
    render_gemma4_chat(messages);
  });
  return 0;
}
