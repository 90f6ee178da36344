// IncrementalDetokenizer: text for a stream of ids that arrive one at a time (generation). It
// releases text only once it is complete: a character spelled by byte-fallback tokens (<0xF0>
// <0x9F> <0x98> <0x80>) comes out whole when its last byte arrives, never as U+FFFD halves.
// It decodes a short window of recent ids each time (the previous release point on), so decoders
// that treat the first token specially (Metaspace, Strip) see the same context as a full decode.
// Borrows the Tokenizer, which must outlive it; one detokenizer per stream, not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace staticlm {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}

  // Adds one id and returns the text it completes (often empty). An id outside the vocabulary
  // throws kOutOfRange and is not added.
  std::string push(int id);

  // Returns the text still held back (bytes of an unfinished character decode to U+FFFD, as in
  // Tokenizer::decode) and starts a new stream.
  std::string finish();

  // Every id pushed since the stream started.
  const std::vector<int>& ids() const { return ids_; }

 private:
  std::string window(std::size_t end) const;

  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int> ids_;
  std::size_t prefix_ = 0;  // window start: ids before it are released and no longer decoded
  std::size_t read_ = 0;    // ids before it have had their text released
};

}  // namespace staticlm
