#include "text/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "base/mmap.h"
#include "text/tokenizer_cache.h"
#include "text/tokenizer_json.h"
#include "text/utf8.h"

namespace staticlm {

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& path) {
  const auto file = MappedFile::open(path);
  if (file->size() == 0) invalid_file(path + ": the file is empty (expected a tokenizer.json)");
  const std::string_view json(reinterpret_cast<const char*>(file->data()), file->size());
  const std::string dir = tokenizer_cache_dir();
  if (dir.empty()) return from_json(json, path);
  const TokenizerCacheKey key = tokenizer_cache_key(json);
  const std::string cache = tokenizer_cache_file(dir, key);
  if (std::optional<TokenizerCacheEntry> e = read_tokenizer_cache(cache, key)) {
    if (auto t = from_cache_entry(std::move(*e), path)) return t;
  }
  TokenizerSpec spec = parse_tokenizer_json(json, path);
  BpeSpec model = std::move(spec.model);
  TokenizerSpec parts = spec;  // all but the vocabulary and merges, for the cache
  spec.model = std::move(model);
  auto t = from_spec(std::move(spec), path);
  write_tokenizer_cache(cache, tokenizer_cache_bytes(key, parts, *t->model_));
  return t;
}

std::unique_ptr<Tokenizer> Tokenizer::from_cache(std::string_view bytes, std::string_view json, const std::string& name) {
  std::optional<TokenizerCacheEntry> e = tokenizer_cache_entry(bytes, tokenizer_cache_key(json));
  return e ? from_cache_entry(std::move(*e), name) : nullptr;
}

std::unique_ptr<Tokenizer> Tokenizer::from_cache_entry(TokenizerCacheEntry entry, const std::string& name) {
  try {
    auto t = from_parts(std::move(entry.parts), std::move(entry.model), name);
    t->from_cache_ = true;
    return t;
  } catch (const std::exception&) {
    return nullptr;  // parts no JSON would have given (a damaged file): the caller reads the JSON
  }
}

std::unique_ptr<Tokenizer> Tokenizer::from_json(std::string_view json, const std::string& name) {
  return from_spec(parse_tokenizer_json(json, name), name);
}

std::unique_ptr<Tokenizer> Tokenizer::from_spec(TokenizerSpec spec, const std::string& name) {
  return from_parts(std::move(spec), nullptr, name);
}

std::unique_ptr<Tokenizer> Tokenizer::from_parts(TokenizerSpec spec, std::unique_ptr<BpeModel> model, const std::string& name) {
  auto t = std::unique_ptr<Tokenizer>(new Tokenizer());
  t->name_ = name;
  if (spec.normalizer) t->normalizer_ = Normalizer::create(*spec.normalizer, name + ": normalizer");
  if (spec.pre_tokenizer) t->pre_tokenizer_ = PreTokenizer::create(*spec.pre_tokenizer, name + ": pre_tokenizer");
  t->track_origins_ = t->pre_tokenizer_ && t->pre_tokenizer_->needs_origins();
  if (spec.decoder) t->decoder_ = Decoder::create(*spec.decoder, name + ": decoder");
  t->model_ = model != nullptr ? std::move(model) : BpeModel::create(std::move(spec.model), name);

  // Added tokens keep the model's id when the model has their string (as upstream); a file that
  // says otherwise is refused rather than silently renumbered.
  int limit = t->model_->id_limit();
  for (std::size_t i = 0; i < spec.added_tokens.size(); ++i) {
    AddedTokenSpec& a = spec.added_tokens[i];
    const std::string at = name + ": added_tokens[" + std::to_string(i) + "]";
    const int model_id = t->model_->token_to_id(a.content);
    if (model_id >= 0 && model_id != a.id) {
      invalid_file(at + ": \"" + a.content + "\" has id " + std::to_string(a.id) + " but the model vocabulary gives it id " +
                   std::to_string(model_id));
    }
    if (model_id < 0 && t->model_->has_id(a.id)) {
      invalid_file(at + ": id " + std::to_string(a.id) + " of \"" + a.content + "\" belongs to \"" +
                   std::string(t->model_->token(a.id)) + "\" in the model vocabulary");
    }
    limit = std::max(limit, a.id + 1);
  }
  t->id_limit_ = limit;
  t->added_slot_.assign(static_cast<std::size_t>(limit), -1);
  std::vector<int> ids;  // each added id once
  for (const AddedTokenSpec& a : spec.added_tokens) {
    if (a.content.empty()) continue;
    // Upstream decodes a normalized added token through its normalized form, so that the decoder
    // undoes the normalizer (e.g. "Day" is matched and decoded as "▁Day" under Prepend("▁")).
    NormalizedText n = NormalizedText::original(a.content, 0, false);
    if (a.normalized && t->normalizer_) t->normalizer_->normalize(n);
    std::int32_t& slot = t->added_slot_[static_cast<std::size_t>(a.id)];
    if (slot < 0) {  // an id listed twice keeps its last entry
      slot = static_cast<std::int32_t>(t->added_tokens_.size());
      t->added_tokens_.emplace_back();
      ids.push_back(a.id);
    }
    t->added_tokens_[static_cast<std::size_t>(slot)] = {a.content, n.text, a.special};
  }
  // In id order, so that of two ids with one content the last wins, whatever the file's order.
  std::sort(ids.begin(), ids.end());
  t->added_ids_.reserve(ids.size());
  for (int id : ids) t->added_ids_.set(t->added_token(id)->content, id);
  t->added_ = std::make_unique<AddedVocabulary>(spec.added_tokens, t->normalizer_.get());
  if (spec.post_processor) {
    for (int id : spec.post_processor->before) {
      if (id >= limit) invalid_file(name + ": post_processor: special token id " + std::to_string(id) + " is past the vocabulary");
    }
    for (int id : spec.post_processor->after) {
      if (id >= limit) invalid_file(name + ": post_processor: special token id " + std::to_string(id) + " is past the vocabulary");
    }
    t->has_template_ = true;
    t->template_ = *spec.post_processor;
  }
  return t;
}

int Tokenizer::token_to_id(std::string_view token) const {
  const int a = added_ids_.get(token);
  return a >= 0 ? a : model_->token_to_id(token);
}

std::optional<std::string_view> Tokenizer::id_to_token(int id) const {
  if (id < 0 || id >= id_limit_) return std::nullopt;
  if (const AddedToken* a = added_token(id)) return a->content;
  if (!model_->has_id(id)) return std::nullopt;
  return model_->token(id);
}

bool Tokenizer::is_special(int id) const {
  if (id < 0 || id >= id_limit_) return false;
  const AddedToken* a = added_token(id);
  return a != nullptr && a->special;
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_special_tokens, bool parse_special) const {
  return encode_limited(text, add_special_tokens, std::numeric_limits<std::size_t>::max(), parse_special);
}

std::optional<std::vector<int>> Tokenizer::encode_at_most(std::string_view text, std::size_t max_tokens,
                                                           bool add_special_tokens, TokenCount* count) const {
  TokenCount c;
  try {
    std::vector<int> ids = encode_limited(text, add_special_tokens, max_tokens);
    if (ids.size() <= max_tokens) return ids;
    c = {ids.size(), true};
  } catch (const TooMany& t) {
    c = {t.at_least, false};
  }
  if (count != nullptr) *count = c.exact || text.size() > kExactCountBytes ? c : TokenCount{encode(text, add_special_tokens).size(), true};
  return std::nullopt;
}

void Tokenizer::encode_piece(std::string_view piece, std::vector<int>& out, BpeScratch& scratch, std::size_t limit) const {
  const std::size_t per_token = model_->max_bytes_per_token();
  if (per_token != 0 && out.size() + (piece.size() + per_token - 1) / per_token > limit) {
    throw TooMany{out.size() + (piece.size() + per_token - 1) / per_token};
  }
  model_->encode(piece, out, scratch);
  if (out.size() > limit) throw TooMany{out.size()};
}

std::vector<int> Tokenizer::encode_limited(std::string_view text, bool add_special_tokens, std::size_t limit,
                                           bool parse_special) const {
  const std::size_t bad = utf8_first_invalid(text);
  if (bad != std::string_view::npos) {
    invalid_argument("text to encode is not valid UTF-8 (bad byte at offset " + std::to_string(bad) + ")");
  }
  if (text.size() > 0x7FFFFFF0u) out_of_range("text to encode is longer than 2 GiB");
  std::vector<int> out;
  if (add_special_tokens && has_template_) out = template_.before;
  BpeScratch scratch;
  std::vector<AddedVocabulary::Segment> segments;
  added_->find(text, /*normalized_pass=*/false, segments);
  // Text between added tokens is encoded a run at a time; without parse_special a special
  // token's span (and any whitespace it stripped) joins the run around it.
  std::size_t run_begin = 0, run_end = 0;
  const auto flush = [&] {
    if (run_end > run_begin) {
      encode_text(text.substr(run_begin, run_end - run_begin), static_cast<std::uint32_t>(run_begin), out, scratch, limit,
                  parse_special);
    }
    run_begin = run_end = 0;
  };
  for (const auto& seg : segments) {
    if (seg.end == seg.begin) continue;
    if (seg.id >= 0 && (parse_special || !is_special(seg.id))) {
      flush();
      out.push_back(seg.id);
      if (out.size() > limit) throw TooMany{out.size()};
    } else {
      if (run_end == run_begin) run_begin = seg.begin;
      run_end = seg.end;
      if (parse_special) flush();  // each text segment on its own, as always
    }
  }
  flush();
  if (add_special_tokens && has_template_) out.insert(out.end(), template_.after.begin(), template_.after.end());
  return out;
}

void Tokenizer::encode_text(std::string_view text, std::uint32_t offset, std::vector<int>& out, BpeScratch& scratch,
                            std::size_t limit, bool parse_special) const {
  NormalizedText section = NormalizedText::original(text, offset, track_origins_);
  if (normalizer_) normalizer_->normalize(section);
  std::vector<NormalizedText> pieces;
  if (added_->has_normalized_tokens()) {
    std::vector<AddedVocabulary::Segment> segments;
    added_->find(section.text, /*normalized_pass=*/true, segments);
    std::vector<NormalizedText> run;
    // A text slice being gathered (without parse_special a special token's span joins the text
    // around it, as in the first pass).
    std::optional<std::pair<std::size_t, std::size_t>> slice;
    const auto end_slice = [&] {
      if (slice) run.push_back(section.slice(slice->first, slice->second));
      slice.reset();
    };
    auto flush = [&] {
      end_slice();
      if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(run);
      for (const NormalizedText& p : run) encode_piece(p.text, out, scratch, limit);
      run.clear();
    };
    for (const auto& seg : segments) {
      if (seg.end == seg.begin) continue;
      if (seg.id >= 0 && (parse_special || !is_special(seg.id))) {
        flush();
        out.push_back(seg.id);
        if (out.size() > limit) throw TooMany{out.size()};
      } else {
        if (!slice) slice.emplace(seg.begin, seg.end);
        slice->second = seg.end;
        if (parse_special) end_slice();  // each text segment on its own, as always
      }
    }
    flush();
    return;
  }
  if (section.text.empty()) return;
  pieces.push_back(std::move(section));
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  for (const NormalizedText& p : pieces) encode_piece(p.text, out, scratch, limit);
}

std::string Tokenizer::token_bytes(int id) const {
  const std::optional<std::string_view> piece = id_to_token(id);
  unsigned byte = 0;
  if (piece && piece->size() == 6 && piece->starts_with("<0x") && piece->ends_with(">") &&
      std::sscanf(std::string(*piece).c_str(), "<0x%2x>", &byte) == 1) {
    return std::string(1, static_cast<char>(byte));
  }
  return decode(std::span<const int>(&id, 1));
}

std::string Tokenizer::decode(std::span<const int> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int id : ids) {
    const std::optional<std::string_view> t = id_to_token(id);
    if (!t) {
      out_of_range("token id " + std::to_string(id) + " is not in the vocabulary of " + name_ + " (ids 0.." +
                   std::to_string(id_limit_ - 1) + ")");
    }
    if (skip_special_tokens && is_special(id)) continue;
    const AddedToken* a = added_token(id);
    tokens.emplace_back(a != nullptr ? std::string_view(a->decoded) : *t);
  }
  if (decoder_) return decoder_->decode(std::move(tokens));
  std::string joined;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) joined += ' ';
    joined += tokens[i];
  }
  return joined;
}

const TokenIndex& Tokenizer::token_index() const {
  std::call_once(index_once_, [this] { index_ = std::make_unique<TokenIndex>(TokenIndex::build(*this)); });
  return *index_;
}

}  // namespace staticlm
