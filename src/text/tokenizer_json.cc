#include "text/tokenizer_json.h"

#include <simdjson.h>

#include <optional>

#include "base/error.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Reads typed fields and names the file and field in every error.
class Reader {
 public:
  explicit Reader(std::string name) : name_(std::move(name)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    invalid_file(name_ + ": " + field + ": " + what);
  }
  [[noreturn]] void refuse(const std::string& field, const std::string& what) const {
    unsupported(name_ + ": " + field + ": " + what);
  }

  object obj(element e, const std::string& field) const {
    object o;
    if (e.get_object().get(o)) fail(field, "expected an object");
    return o;
  }
  array arr(element e, const std::string& field) const {
    array a;
    if (e.get_array().get(a)) fail(field, "expected an array");
    return a;
  }
  std::string_view str(element e, const std::string& field) const {
    std::string_view s;
    if (e.get_string().get(s)) fail(field, "expected a string");
    return s;
  }
  bool boolean(element e, const std::string& field) const {
    bool b = false;
    if (e.get_bool().get(b)) fail(field, "expected true or false");
    return b;
  }
  std::int64_t integer(element e, const std::string& field) const {
    std::int64_t v = 0;
    if (e.get_int64().get(v)) fail(field, "expected an integer");
    return v;
  }
  // A member that may be missing or null.
  std::optional<element> member(object o, std::string_view key) const {
    element e;
    if (o[key].get(e) || e.is_null()) return std::nullopt;
    return e;
  }
  element required(object o, std::string_view key, const std::string& field) const {
    element e;
    if (o[key].get(e)) fail(field, "missing field \"" + std::string(key) + "\"");
    return e;
  }
  bool flag(object o, std::string_view key, bool fallback, const std::string& field) const {
    auto e = member(o, key);
    return e ? boolean(*e, field + "." + std::string(key)) : fallback;
  }
  std::string type_of(object o, const std::string& field) const {
    return std::string(str(required(o, "type", field), field + ".type"));
  }
  char32_t single_char(element e, const std::string& field) const {
    const std::string_view s = str(e, field);
    std::size_t p = 0;
    if (s.empty() || !is_valid_utf8(s)) fail(field, "expected a single character");
    const char32_t c = utf8_decode(s, p);
    if (p != s.size()) fail(field, "expected a single character, got \"" + std::string(s) + "\"");
    return c;
  }

 private:
  std::string name_;
};

PatternSpec read_pattern(const Reader& r, element e, const std::string& field) {
  const object o = r.obj(e, field);
  PatternSpec p;
  if (auto s = r.member(o, "String")) {
    p.text = r.str(*s, field + ".String");
  } else if (auto x = r.member(o, "Regex")) {
    p.is_regex = true;
    p.text = r.str(*x, field + ".Regex");
  } else {
    r.fail(field, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  return p;
}

NormalizerSpec read_normalizer(const Reader& r, element e, const std::string& field) {
  const object o = r.obj(e, field);
  const std::string type = r.type_of(o, field);
  using T = NormalizerSpec::Type;
  NormalizerSpec n;
  if (type == "Replace") {
    n.type = T::kReplace;
    n.pattern = read_pattern(r, r.required(o, "pattern", field), field + ".pattern");
    n.content = r.str(r.required(o, "content", field), field + ".content");
  } else if (type == "Prepend") {
    n.type = T::kPrepend;
    n.content = r.str(r.required(o, "prepend", field), field + ".prepend");
  } else if (type == "NFC") {
    n.type = T::kNfc;
  } else if (type == "NFD") {
    n.type = T::kNfd;
  } else if (type == "NFKC") {
    n.type = T::kNfkc;
  } else if (type == "NFKD") {
    n.type = T::kNfkd;
  } else if (type == "Sequence") {
    n.type = T::kSequence;
    std::size_t i = 0;
    for (element c : r.arr(r.required(o, "normalizers", field), field + ".normalizers")) {
      n.children.push_back(read_normalizer(r, c, field + ".normalizers[" + std::to_string(i++) + "]"));
    }
  } else {
    r.refuse(field, "normalizer type \"" + type + "\" is not supported (supported: Replace, Prepend, NFC, NFD, NFKC, NFKD, Sequence)");
  }
  return n;
}

PrependScheme read_prepend_scheme(const Reader& r, object o, const std::string& field) {
  PrependScheme scheme = PrependScheme::kAlways;
  if (auto s = r.member(o, "prepend_scheme")) {
    const std::string_view v = r.str(*s, field + ".prepend_scheme");
    if (v == "always") scheme = PrependScheme::kAlways;
    else if (v == "never") scheme = PrependScheme::kNever;
    else if (v == "first") scheme = PrependScheme::kFirst;
    else r.fail(field + ".prepend_scheme", "expected \"always\", \"never\" or \"first\", got \"" + std::string(v) + "\"");
  }
  if (auto a = r.member(o, "add_prefix_space")) {
    if (!r.boolean(*a, field + ".add_prefix_space")) {
      if (r.member(o, "prepend_scheme") && scheme != PrependScheme::kNever) {
        r.fail(field, "add_prefix_space false does not match prepend_scheme");
      }
      scheme = PrependScheme::kNever;
    }
  }
  return scheme;
}

PreTokenizerSpec read_pre_tokenizer(const Reader& r, element e, const std::string& field) {
  const object o = r.obj(e, field);
  const std::string type = r.type_of(o, field);
  using T = PreTokenizerSpec::Type;
  PreTokenizerSpec p;
  if (type == "Split") {
    p.type = T::kSplit;
    p.pattern = read_pattern(r, r.required(o, "pattern", field), field + ".pattern");
    const std::string_view b = r.str(r.required(o, "behavior", field), field + ".behavior");
    if (b == "Removed") p.behavior = SplitBehavior::kRemoved;
    else if (b == "Isolated") p.behavior = SplitBehavior::kIsolated;
    else if (b == "MergedWithPrevious") p.behavior = SplitBehavior::kMergedWithPrevious;
    else if (b == "MergedWithNext") p.behavior = SplitBehavior::kMergedWithNext;
    else if (b == "Contiguous") p.behavior = SplitBehavior::kContiguous;
    else r.fail(field + ".behavior", "expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous, got \"" + std::string(b) + "\"");
    p.invert = r.flag(o, "invert", false, field);
  } else if (type == "Metaspace") {
    p.type = T::kMetaspace;
    p.replacement = r.single_char(r.required(o, "replacement", field), field + ".replacement");
    p.prepend_scheme = read_prepend_scheme(r, o, field);
    p.split = r.flag(o, "split", true, field);
  } else if (type == "ByteLevel") {
    p.type = T::kByteLevel;
    p.add_prefix_space = r.flag(o, "add_prefix_space", true, field);
    p.use_regex = r.flag(o, "use_regex", true, field);
    r.flag(o, "trim_offsets", true, field);  // offsets only: ids do not depend on it
  } else if (type == "Digits") {
    p.type = T::kDigits;
    p.individual_digits = r.flag(o, "individual_digits", false, field);
  } else if (type == "Sequence") {
    p.type = T::kSequence;
    std::size_t i = 0;
    for (element c : r.arr(r.required(o, "pretokenizers", field), field + ".pretokenizers")) {
      p.children.push_back(read_pre_tokenizer(r, c, field + ".pretokenizers[" + std::to_string(i++) + "]"));
    }
  } else {
    r.refuse(field, "pre-tokenizer type \"" + type + "\" is not supported (supported: Split, Metaspace, ByteLevel, Digits, Sequence)");
  }
  return p;
}

DecoderSpec read_decoder(const Reader& r, element e, const std::string& field) {
  const object o = r.obj(e, field);
  const std::string type = r.type_of(o, field);
  using T = DecoderSpec::Type;
  DecoderSpec d;
  if (type == "Replace") {
    d.type = T::kReplace;
    d.pattern = read_pattern(r, r.required(o, "pattern", field), field + ".pattern");
    d.content = r.str(r.required(o, "content", field), field + ".content");
  } else if (type == "ByteFallback") {
    d.type = T::kByteFallback;
  } else if (type == "Fuse") {
    d.type = T::kFuse;
  } else if (type == "Strip") {
    d.type = T::kStrip;
    const char32_t c = r.single_char(r.required(o, "content", field), field + ".content");
    utf8_append(d.content, c);
    const std::int64_t start = r.integer(r.required(o, "start", field), field + ".start");
    const std::int64_t stop = r.integer(r.required(o, "stop", field), field + ".stop");
    if (start < 0 || stop < 0 || start > 1000000 || stop > 1000000) r.fail(field, "start and stop must be small non-negative counts");
    d.start = static_cast<int>(start);
    d.stop = static_cast<int>(stop);
  } else if (type == "Metaspace") {
    d.type = T::kMetaspace;
    d.replacement = r.single_char(r.required(o, "replacement", field), field + ".replacement");
    d.prepend_scheme = read_prepend_scheme(r, o, field);
  } else if (type == "ByteLevel") {
    d.type = T::kByteLevel;  // its add_prefix_space / trim_offsets / use_regex do not change decoding
  } else if (type == "Sequence") {
    d.type = T::kSequence;
    std::size_t i = 0;
    for (element c : r.arr(r.required(o, "decoders", field), field + ".decoders")) {
      d.children.push_back(read_decoder(r, c, field + ".decoders[" + std::to_string(i++) + "]"));
    }
  } else {
    r.refuse(field, "decoder type \"" + type + "\" is not supported (supported: Replace, ByteFallback, Fuse, Strip, Metaspace, ByteLevel, Sequence)");
  }
  return d;
}

BpeSpec read_model(const Reader& r, element e) {
  const std::string field = "model";
  const object o = r.obj(e, field);
  if (auto t = r.member(o, "type")) {
    const std::string_view type = r.str(*t, "model.type");
    if (type != "BPE") r.refuse(field, "model type \"" + std::string(type) + "\" is not supported (supported: BPE)");
  }
  BpeSpec m;
  const object vocab = r.obj(r.required(o, "vocab", field), "model.vocab");
  const array merges = r.arr(r.required(o, "merges", field), "model.merges");
  m.strings.reserve(16 * (vocab.size() + merges.size()));
  m.vocab.reserve(vocab.size());
  for (auto [key, value] : vocab) {
    std::int64_t id = 0;
    if (value.get_int64().get(id) || id < 0 || id > kMaxTokenId) {
      r.fail("model.vocab[\"" + std::string(key) + "\"]",
             "expected an integer id from 0 to " + std::to_string(kMaxTokenId) + " (the limit)");
    }
    m.vocab.emplace_back(m.add(key), static_cast<int>(id));
  }
  m.merges.reserve(merges.size());
  std::size_t i = 0;
  for (element item : merges) {
    std::string_view s;
    array pair;
    if (!item.get_string().get(s)) {
      // Old form "a b": exactly one space, as upstream requires.
      const std::size_t sp = s.find(' ');
      if (sp == std::string_view::npos || s.find(' ', sp + 1) != std::string_view::npos) {
        r.fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\" with exactly one space, got \"" + std::string(s) + "\"");
      }
      const BpeSpec::Str a = m.add(s.substr(0, sp));
      m.merges.emplace_back(a, m.add(s.substr(sp + 1)));
    } else if (!item.get_array().get(pair) && pair.size() == 2) {
      std::string_view a, b;
      if (pair.at(0).get_string().get(a) || pair.at(1).get_string().get(b)) {
        r.fail("model.merges[" + std::to_string(i) + "]", "expected a pair of strings");
      }
      const BpeSpec::Str sa = m.add(a);
      m.merges.emplace_back(sa, m.add(b));
    } else {
      r.fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\" or [\"left\", \"right\"]");
    }
    ++i;
  }
  if (auto u = r.member(o, "unk_token")) m.unk_token = std::string(r.str(*u, "model.unk_token"));
  m.fuse_unk = r.flag(o, "fuse_unk", false, field);
  m.byte_fallback = r.flag(o, "byte_fallback", false, field);
  m.ignore_merges = r.flag(o, "ignore_merges", false, field);
  if (auto d = r.member(o, "dropout")) {
    double p = 0;
    if (d->get_double().get(p)) r.fail("model.dropout", "expected a number or null");
    if (p != 0.0) r.refuse("model.dropout", "BPE dropout is not supported (encoding here is deterministic)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto v = r.member(o, key)) {
      if (!r.str(*v, std::string("model.") + key).empty()) r.refuse(std::string("model.") + key, "is not supported");
    }
  }
  return m;
}

// TemplateProcessing (special ids around the text), ByteLevel (offsets only: no ids), or a
// Sequence of those holding at most one template.
std::optional<TemplateSpec> read_post_processor(const Reader& r, element e, const std::string& field) {
  const object o = r.obj(e, field);
  const std::string type = r.type_of(o, field);
  if (type == "ByteLevel") return std::nullopt;
  if (type == "Sequence") {
    std::optional<TemplateSpec> t;
    std::size_t i = 0;
    for (element c : r.arr(r.required(o, "processors", field), field + ".processors")) {
      const std::string at = field + ".processors[" + std::to_string(i++) + "]";
      std::optional<TemplateSpec> part = read_post_processor(r, c, at);
      if (part && t) r.refuse(at, "a second TemplateProcessing in one sequence is not supported");
      if (part) t = std::move(part);
    }
    return t;
  }
  if (type != "TemplateProcessing") {
    r.refuse(field, "post-processor type \"" + type + "\" is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
  }
  const object specials = r.obj(r.required(o, "special_tokens", field), field + ".special_tokens");
  TemplateSpec t;
  bool seen_sequence = false;
  std::size_t i = 0;
  for (element piece : r.arr(r.required(o, "single", field), field + ".single")) {
    const std::string at = field + ".single[" + std::to_string(i++) + "]";
    const object p = r.obj(piece, at);
    if (auto seq = r.member(p, "Sequence")) {
      const std::string_view id = r.str(r.required(r.obj(*seq, at + ".Sequence"), "id", at + ".Sequence"), at + ".Sequence.id");
      if (id != "A") r.fail(at + ".Sequence.id", "a single-sequence template can only hold sequence A, got \"" + std::string(id) + "\"");
      if (seen_sequence) r.fail(at, "sequence A appears twice");
      seen_sequence = true;
    } else if (auto sp = r.member(p, "SpecialToken")) {
      const std::string name(r.str(r.required(r.obj(*sp, at + ".SpecialToken"), "id", at + ".SpecialToken"), at + ".SpecialToken.id"));
      auto entry = r.member(specials, name);
      if (!entry) r.fail(at, "special token \"" + name + "\" is not listed in " + field + ".special_tokens");
      const std::string where = field + ".special_tokens[\"" + name + "\"].ids";
      auto& target = seen_sequence ? t.after : t.before;
      for (element id : r.arr(r.required(r.obj(*entry, where), "ids", where), where)) {
        const std::int64_t v = r.integer(id, where);
        if (v < 0 || v > 0x7FFFFFFF) r.fail(where, "expected non-negative ids");
        target.push_back(static_cast<int>(v));
      }
    } else {
      r.fail(at, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
  }
  if (!seen_sequence) r.fail(field + ".single", "the template never places sequence A");
  return t;
}

}  // namespace

TokenizerSpec parse_tokenizer_json(std::string_view json, const std::string& name) {
  simdjson::dom::parser parser;
  element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc)) {
    invalid_file(name + ": not valid JSON: " + simdjson::error_message(err));
  }
  Reader r(name);
  const object root = r.obj(doc, "top level");
  for (const char* key : {"truncation", "padding"}) {
    if (r.member(root, key)) r.refuse(key, "is set; truncation and padding are not supported (they must be null)");
  }
  TokenizerSpec spec;
  if (auto added = r.member(root, "added_tokens")) {
    std::size_t i = 0;
    for (element item : r.arr(*added, "added_tokens")) {
      const std::string at = "added_tokens[" + std::to_string(i++) + "]";
      const object o = r.obj(item, at);
      AddedTokenSpec t;
      const std::int64_t id = r.integer(r.required(o, "id", at), at + ".id");
      if (id < 0 || id > kMaxTokenId) r.fail(at + ".id", "expected an id from 0 to " + std::to_string(kMaxTokenId) + " (the limit)");
      t.id = static_cast<int>(id);
      t.content = r.str(r.required(o, "content", at), at + ".content");
      t.special = r.flag(o, "special", false, at);
      t.lstrip = r.flag(o, "lstrip", false, at);
      t.rstrip = r.flag(o, "rstrip", false, at);
      t.normalized = r.flag(o, "normalized", true, at);
      t.single_word = r.flag(o, "single_word", false, at);
      spec.added_tokens.push_back(std::move(t));
    }
  }
  if (auto n = r.member(root, "normalizer")) spec.normalizer = read_normalizer(r, *n, "normalizer");
  if (auto p = r.member(root, "pre_tokenizer")) spec.pre_tokenizer = read_pre_tokenizer(r, *p, "pre_tokenizer");
  spec.model = read_model(r, r.required(root, "model", "top level"));
  if (auto p = r.member(root, "post_processor")) spec.post_processor = read_post_processor(r, *p, "post_processor");
  if (auto d = r.member(root, "decoder")) spec.decoder = read_decoder(r, *d, "decoder");
  return spec;
}

}  // namespace staticlm
