// The tokenizer cache: a tokenizer.json's built BPE tables and its other parts kept in a binary
// file named by a hash of the JSON's bytes, so that the next process loading the same file skips
// parsing the JSON and building the tables (Gemma's 14 MB file: ~0.2 s of every command, ~1.5 s
// sanitized; from the cache a few milliseconds). Tokenizer::load uses it; nothing else does.
//
// Where: $STATICLM_CACHE_DIR, else $XDG_CACHE_HOME/staticlm, else $HOME/.cache/staticlm; off
// when STATICLM_NO_CACHE is set (to anything but "" or "0"), when STATICLM_CACHE_DIR is set but
// empty, or without a home. A file is used only when its header matches (format version, byte
// order, this build's string hash, the JSON's hash and size) and its payload its checksum, and
// every table it holds passes BpeModel::restore's checks; anything else is a miss, and the JSON
// is read as without a cache (and the file written again). Writes go to a temporary file that is
// renamed into place, so concurrent processes never see half a file; a failed write is ignored.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "text/bpe.h"
#include "text/tokenizer_spec.h"

namespace staticlm {

// The JSON's bytes, hashed (XXH3, 128 bits) with their size.
struct TokenizerCacheKey {
  std::uint64_t high = 0, low = 0, size = 0;
};
TokenizerCacheKey tokenizer_cache_key(std::string_view json);

// The cache directory ("" when the cache is off) and the file for a key in it.
std::string tokenizer_cache_dir();
std::string tokenizer_cache_file(const std::string& dir, const TokenizerCacheKey& key);

// What a cache file holds: the spec without the model's vocabulary and merges (`parts`), and the
// model's built tables.
struct TokenizerCacheEntry {
  TokenizerSpec parts;
  std::unique_ptr<BpeModel> model;
};

// The file's bytes ("" for a spec nested too deep to cache), and back: nullopt when they are not
// an intact cache of `key` (another version, build or JSON, truncated, damaged, or tables that
// fail their checks).
std::string tokenizer_cache_bytes(const TokenizerCacheKey& key, const TokenizerSpec& parts, const BpeModel& model);
std::optional<TokenizerCacheEntry> tokenizer_cache_entry(std::string_view bytes, const TokenizerCacheKey& key);
// A file's bytes from its payload: the header for `key` (with the payload's checksum) before it.
// tokenizer_cache_bytes writes its payload so; the fuzzer and the tests wrap changed payloads.
std::string tokenizer_cache_with_header(const TokenizerCacheKey& key, std::string_view payload);
// The header's size: the payload starts there.
inline constexpr std::size_t kTokenizerCacheHeaderBytes = 64;

// The file read (nullopt when absent or not usable) and written (best effort, atomically; empty
// bytes write nothing).
std::optional<TokenizerCacheEntry> read_tokenizer_cache(const std::string& file, const TokenizerCacheKey& key);
void write_tokenizer_cache(const std::string& file, const std::string& bytes);

}  // namespace staticlm
