// The runtime's token stream as the API's (internal to src/api; Session and Chat): each token
// goes to the caller with the text it completes, control tokens and the end token left out, and
// that text is kept in the result; stop strings read a second detokenizer of their own, so they
// see every piece.
#pragma once

#include <memory>

#include "runtime/generation.h"
#include "staticlm/session.h"
#include "text/detokenizer.h"
#include "text/tokenizer.h"

namespace staticlm::api {

class TokenStream {
 public:
  // `tok` null: no text. Sets g.token_text when g has stop strings (they need `tok`). `special`:
  // the text keeps control tokens and the end token. `g`, `out` and `on_token` must outlive the
  // stream.
  TokenStream(const staticlm::Tokenizer* tok, GenerateOptions& g, GenerationResult& out, const TokenCallback& on_token,
              bool special = false);
  TokenStream(const TokenStream&) = delete;
  TokenStream& operator=(const TokenStream&) = delete;

  const staticlm::TokenCallback& callback() const { return stream_; }
  // The text held back until the end, into out.text_tail and out.text.
  void finish();

 private:
  std::unique_ptr<IncrementalDetokenizer> stop_text_, text_;
  GenerationResult& out_;
  staticlm::TokenCallback stream_;
};

// The runtime's result into the API's: tokens, stop reason and statistics, with the image
// encode (`encode_seconds`, run inside prefill) reported apart from prefill.
void set_result(GenerationResult& out, const staticlm::GenerationResult& r, double encode_seconds);

}  // namespace staticlm::api
