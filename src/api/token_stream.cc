#include "api/token_stream.h"

namespace staticlm::api {

TokenStream::TokenStream(const staticlm::Tokenizer* tok, GenerateOptions& g, GenerationResult& out,
                         const TokenCallback& on_token, bool special)
    : out_(out) {
  if (!g.stop_strings.empty()) {
    stop_text_ = std::make_unique<IncrementalDetokenizer>(*tok);
    g.token_text = [this](std::int64_t t) { return stop_text_->push(static_cast<int>(t)); };
  }
  if (tok) text_ = std::make_unique<IncrementalDetokenizer>(*tok, /*skip_special_tokens=*/!special);
  // The token that ends the reply is not its text (unless `special`): Gemma 4's <|tool_response>
  // (an end token after a tool call) is not a control token, and would otherwise be printed.
  stream_ = [this, &on_token, &g, special](std::int64_t token) {
    const std::string piece = text_ && (special || !g.is_eos(token)) ? text_->push(static_cast<int>(token)) : std::string();
    out_.text += piece;
    return on_token ? on_token(token, piece) : true;
  };
}

void TokenStream::finish() {
  if (!text_) return;
  out_.text_tail = text_->finish();
  out_.text += out_.text_tail;
}

void set_result(GenerationResult& out, const staticlm::GenerationResult& r, double encode_seconds) {
  out.tokens = r.tokens;
  out.stop_reason = stop_reason_name(r.reason);
  out.message = r.message;
  const staticlm::GenerationStats& st = r.stats;
  out.stats.prompt_tokens = st.prompt_tokens;
  out.stats.generated_tokens = st.generated_tokens;
  out.stats.decode_steps = st.decode_steps;
  out.stats.prefill_seconds = st.prefill_seconds - encode_seconds;
  out.stats.image_encode_seconds = encode_seconds;
  out.stats.decode_seconds = st.decode_seconds;
  out.stats.time_to_first_token_seconds = st.time_to_first_token_seconds;
}

}  // namespace staticlm::api
