// The vocabulary as bytes, sorted, so a constraint can walk it as a trie: tokens that share a
// prefix with the one before reuse the work done on that prefix, and a prefix that fails rules
// out every token after it that shares it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace staticlm {

class Tokenizer;

struct TokenIndex {
  std::vector<std::string> bytes;    // by id: the bytes the token adds to the text; "" for special tokens
  std::vector<std::int32_t> sorted;  // the ids with bytes, in byte order
  std::vector<std::uint32_t> lcp;    // lcp[i]: the bytes sorted[i] shares with sorted[i - 1] (0 for i = 0)
  std::size_t max_bytes = 0;
  // The bytes again in sorted order, one after the other: a walk reads them in a stream instead
  // of one cache miss a token (bytes[] holds 262,144 strings in id order).
  std::string sorted_text;
  std::vector<std::uint32_t> sorted_at;  // sorted_text[sorted_at[i], sorted_at[i + 1]): sorted[i]'s bytes
  std::string_view sorted_bytes(std::size_t i) const {
    return std::string_view(sorted_text).substr(sorted_at[i], sorted_at[i + 1] - sorted_at[i]);
  }
  // By id: the token can sit anywhere inside a JSON string (whole UTF-8 characters, no '"', '\\'
  // or control bytes), and its characters (code points).
  std::vector<std::uint8_t> string_safe;
  std::vector<std::uint32_t> chars;

  // A byte-fallback token (<0xHH>) is its byte; a special token has none; any other token is the
  // text it decodes to.
  static TokenIndex build(const Tokenizer& tok);
};

}  // namespace staticlm
