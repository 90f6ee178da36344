#include "text/tokenizer_cache.h"

#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>

#include "base/byte_stream.h"
#include "base/error.h"
#include "base/file.h"
#include "base/mmap.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

constexpr char kMagic[8] = {'S', 'L', 'M', 'T', 'O', 'K', 'C', '\n'};
// Raised whenever what is written changes (the spec's fields, BpeModel's tables, their hashes).
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::uint32_t kByteOrder = 0x01020304;
// The normalizer, pre-tokenizer and decoder trees nest at most this deep in a cache file (a
// tree deeper than that is not cached).
constexpr int kMaxSpecDepth = 32;

// StringIdMap's slots hold std::hash values, which another standard library may compute
// otherwise: a file is used only by builds that hash this text alike.
std::uint64_t string_hash_probe() { return std::hash<std::string_view>{}("staticlm tokenizer cache"); }

struct Header {
  char magic[8];
  std::uint32_t version, byte_order;
  std::uint64_t hash_probe;
  std::uint64_t key_high, key_low, key_size;
  std::uint64_t payload_size, payload_hash;
};
static_assert(sizeof(Header) == kTokenizerCacheHeaderBytes);

// ---- the spec's parts ----

void put_pattern(ByteWriter& w, const PatternSpec& p) {
  w.put<std::uint8_t>(p.is_regex);
  w.put_string(p.text);
}

// Strings came from the JSON, which is valid UTF-8 throughout; the code reading them may rely on it.
std::string get_text(ByteReader& r) {
  std::string s = r.get_string();
  if (!is_valid_utf8(s)) throw ByteReader::Short{};
  return s;
}

PatternSpec get_pattern(ByteReader& r) {
  PatternSpec p;
  p.is_regex = r.get_bool();
  p.text = get_text(r);
  return p;
}

template <class E>
E get_enum(ByteReader& r, E last) {
  const auto v = r.get<std::uint8_t>();
  if (v > static_cast<std::uint8_t>(last)) throw ByteReader::Short{};
  return static_cast<E>(v);
}

char32_t get_char(ByteReader& r) {
  const auto c = r.get<char32_t>();
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) throw ByteReader::Short{};
  return c;
}

int get_count(ByteReader& r, std::int64_t most) {
  const auto v = r.get<std::int32_t>();
  if (v < 0 || v > most) throw ByteReader::Short{};
  return v;
}

void check_depth(int depth) {
  if (depth > kMaxSpecDepth) throw ByteReader::Short{};
}

// A node's children (a Sequence's), one level deeper.
template <class Spec, class Put>
void put_children(ByteWriter& w, const std::vector<Spec>& children, int depth, Put put) {
  w.put<std::uint64_t>(children.size());
  for (const Spec& c : children) put(w, c, depth + 1);
}

template <class Spec, class Get>
void get_children(ByteReader& r, std::vector<Spec>& children, int depth, Get get) {
  const auto n = r.get<std::uint64_t>();
  if (n > r.left()) throw ByteReader::Short{};  // each child takes bytes
  for (std::uint64_t i = 0; i < n; ++i) children.push_back(get(r, depth + 1));
}

void put_normalizer(ByteWriter& w, const NormalizerSpec& n, int depth) {
  check_depth(depth);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(n.type));
  put_pattern(w, n.pattern);
  w.put_string(n.content);
  put_children(w, n.children, depth, put_normalizer);
}

NormalizerSpec get_normalizer(ByteReader& r, int depth) {
  check_depth(depth);
  NormalizerSpec n;
  n.type = get_enum(r, NormalizerSpec::Type::kSequence);
  n.pattern = get_pattern(r);
  n.content = get_text(r);
  get_children(r, n.children, depth, get_normalizer);
  return n;
}

void put_pre_tokenizer(ByteWriter& w, const PreTokenizerSpec& p, int depth) {
  check_depth(depth);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(p.type));
  put_pattern(w, p.pattern);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(p.behavior));
  w.put<char32_t>(p.replacement);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(p.prepend_scheme));
  for (const bool b : {p.invert, p.split, p.add_prefix_space, p.use_regex, p.individual_digits}) w.put<std::uint8_t>(b);
  put_children(w, p.children, depth, put_pre_tokenizer);
}

PreTokenizerSpec get_pre_tokenizer(ByteReader& r, int depth) {
  check_depth(depth);
  PreTokenizerSpec p;
  p.type = get_enum(r, PreTokenizerSpec::Type::kSequence);
  p.pattern = get_pattern(r);
  p.behavior = get_enum(r, SplitBehavior::kContiguous);
  p.replacement = get_char(r);
  p.prepend_scheme = get_enum(r, PrependScheme::kFirst);
  p.invert = r.get_bool();
  p.split = r.get_bool();
  p.add_prefix_space = r.get_bool();
  p.use_regex = r.get_bool();
  p.individual_digits = r.get_bool();
  get_children(r, p.children, depth, get_pre_tokenizer);
  return p;
}

void put_decoder(ByteWriter& w, const DecoderSpec& d, int depth) {
  check_depth(depth);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(d.type));
  put_pattern(w, d.pattern);
  w.put_string(d.content);
  w.put<std::int32_t>(d.start);
  w.put<std::int32_t>(d.stop);
  w.put<char32_t>(d.replacement);
  w.put<std::uint8_t>(static_cast<std::uint8_t>(d.prepend_scheme));
  put_children(w, d.children, depth, put_decoder);
}

DecoderSpec get_decoder(ByteReader& r, int depth) {
  check_depth(depth);
  DecoderSpec d;
  d.type = get_enum(r, DecoderSpec::Type::kSequence);
  d.pattern = get_pattern(r);
  d.content = get_text(r);
  if (d.type == DecoderSpec::Type::kStrip) {  // one character, as the JSON's reader takes it
    std::size_t p = 0;
    if (!d.content.empty()) utf8_decode(d.content, p);
    if (p == 0 || p != d.content.size()) throw ByteReader::Short{};
  }
  d.start = get_count(r, 1000000);  // the limits tokenizer_json.cc reads them with
  d.stop = get_count(r, 1000000);
  d.replacement = get_char(r);
  d.prepend_scheme = get_enum(r, PrependScheme::kFirst);
  get_children(r, d.children, depth, get_decoder);
  return d;
}

std::vector<int> get_ids(ByteReader& r) {
  std::vector<int> ids = r.get_vector<int>();
  for (const int id : ids) {
    if (id < 0 || id > kMaxTokenId) throw ByteReader::Short{};
  }
  return ids;
}

void put_parts(ByteWriter& w, const TokenizerSpec& s) {
  w.put<std::uint64_t>(s.added_tokens.size());
  for (const AddedTokenSpec& a : s.added_tokens) {
    w.put<std::int32_t>(a.id);
    w.put_string(a.content);
    for (const bool b : {a.special, a.lstrip, a.rstrip, a.normalized, a.single_word}) w.put<std::uint8_t>(b);
  }
  w.put<std::uint8_t>(s.normalizer.has_value());
  if (s.normalizer) put_normalizer(w, *s.normalizer, 0);
  w.put<std::uint8_t>(s.pre_tokenizer.has_value());
  if (s.pre_tokenizer) put_pre_tokenizer(w, *s.pre_tokenizer, 0);
  w.put<std::uint8_t>(s.post_processor.has_value());
  if (s.post_processor) {
    w.put_vector(s.post_processor->before);
    w.put_vector(s.post_processor->after);
  }
  w.put<std::uint8_t>(s.decoder.has_value());
  if (s.decoder) put_decoder(w, *s.decoder, 0);
}

TokenizerSpec get_parts(ByteReader& r) {
  TokenizerSpec s;
  const auto added = r.get<std::uint64_t>();
  if (added > r.left()) throw ByteReader::Short{};
  for (std::uint64_t i = 0; i < added; ++i) {
    AddedTokenSpec a;
    a.id = get_count(r, kMaxTokenId);
    a.content = get_text(r);
    a.special = r.get_bool();
    a.lstrip = r.get_bool();
    a.rstrip = r.get_bool();
    a.normalized = r.get_bool();
    a.single_word = r.get_bool();
    s.added_tokens.push_back(std::move(a));
  }
  if (r.get_bool()) s.normalizer = get_normalizer(r, 0);
  if (r.get_bool()) s.pre_tokenizer = get_pre_tokenizer(r, 0);
  if (r.get_bool()) {
    TemplateSpec t;
    t.before = get_ids(r);
    t.after = get_ids(r);
    s.post_processor = std::move(t);
  }
  if (r.get_bool()) s.decoder = get_decoder(r, 0);
  return s;
}

}  // namespace

TokenizerCacheKey tokenizer_cache_key(std::string_view json) {
  const XXH128_hash_t h = XXH3_128bits(json.data(), json.size());
  return {h.high64, h.low64, json.size()};
}

std::string tokenizer_cache_dir() {
  const auto env = [](const char* name) -> const char* { return std::getenv(name); };
  if (const char* off = env("STATICLM_NO_CACHE"); off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return "";
  if (const char* dir = env("STATICLM_CACHE_DIR")) return dir;
  if (const char* xdg = env("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') return path_join(xdg, "staticlm");
  if (const char* home = env("HOME"); home != nullptr && home[0] == '/') return path_join(path_join(home, ".cache"), "staticlm");
  return "";
}

std::string tokenizer_cache_file(const std::string& dir, const TokenizerCacheKey& key) {
  char name[80];
  std::snprintf(name, sizeof name, "tokenizer-%016llx%016llx-v%u.bin", static_cast<unsigned long long>(key.high),
                static_cast<unsigned long long>(key.low), kFormatVersion);
  return path_join(dir, name);
}

std::string tokenizer_cache_bytes(const TokenizerCacheKey& key, const TokenizerSpec& parts, const BpeModel& model) {
  ByteWriter payload;
  try {
    put_parts(payload, parts);
  } catch (const ByteReader::Short&) {
    return "";  // nested deeper than a cache file holds
  }
  model.save(payload);
  return tokenizer_cache_with_header(key, payload.bytes());
}

std::string tokenizer_cache_with_header(const TokenizerCacheKey& key, std::string_view p) {
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.byte_order = kByteOrder;
  h.hash_probe = string_hash_probe();
  h.key_high = key.high;
  h.key_low = key.low;
  h.key_size = key.size;
  h.payload_size = p.size();
  h.payload_hash = XXH3_64bits(p.data(), p.size());
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes += p;
  return bytes;
}

std::optional<TokenizerCacheEntry> tokenizer_cache_entry(std::string_view bytes, const TokenizerCacheKey& key) {
  Header h;
  if (bytes.size() < sizeof h) return std::nullopt;
  std::memcpy(&h, bytes.data(), sizeof h);
  const std::string_view payload = bytes.substr(sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kFormatVersion || h.byte_order != kByteOrder ||
      h.hash_probe != string_hash_probe() || h.key_high != key.high || h.key_low != key.low || h.key_size != key.size ||
      h.payload_size != payload.size() || h.payload_hash != XXH3_64bits(payload.data(), payload.size())) {
    return std::nullopt;
  }
  try {
    ByteReader r(payload);
    TokenizerCacheEntry e;
    e.parts = get_parts(r);
    e.model = BpeModel::restore(r);
    if (e.model == nullptr || r.left() != 0) return std::nullopt;
    return e;
  } catch (const ByteReader::Short&) {
    return std::nullopt;
  } catch (const std::exception&) {  // sizes no real file has (out of memory)
    return std::nullopt;
  }
}

std::optional<TokenizerCacheEntry> read_tokenizer_cache(const std::string& file, const TokenizerCacheKey& key) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  try {
    const auto mapped = MappedFile::open(file);
    return tokenizer_cache_entry(std::string_view(reinterpret_cast<const char*>(mapped->data()), mapped->size()), key);
  } catch (const Error&) {
    return std::nullopt;
  }
}

void write_tokenizer_cache(const std::string& file, const std::string& bytes) {
  if (bytes.empty()) return;
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
    if (ec) return;
    write_text_atomic(file, bytes);
  } catch (const std::exception&) {
    // A cache that cannot be written is only slower next time.
  }
}

}  // namespace staticlm
