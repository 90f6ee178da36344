#include "text/bpe.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>

#include "base/error.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

constexpr char32_t kMetaspace = U'\u2581';

std::string quote(std::string_view s) {
  std::string q;
  q.reserve(s.size() + 2);
  q.push_back('\'');
  q.append(s);
  q.push_back('\'');
  return q;
}

// Min-heap order on (rank, position), the order upstream pops merges in.
struct CandidateAfter {
  bool operator()(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

}  // namespace

static_assert(kMaxTokenId + 1 == PairMap::kMaxId, "tokenizer.json ids are checked against what the BPE tables hold");

std::unique_ptr<BpeModel> BpeModel::create(BpeSpec&& spec, const std::string& where) {
  auto m = std::unique_ptr<BpeModel>(new BpeModel());
  int max_id = -1;
  std::size_t bytes = 0;
  for (const auto& [str, id] : spec.vocab) {
    if (id < 0) invalid_file(where + ": model.vocab: token " + quote(spec.view(str)) + " has a negative id");
    max_id = std::max(max_id, id);
    bytes += str.size;
  }
  m->id_str_.assign(static_cast<std::size_t>(max_id + 1), BpeSpec::Str{kNoId, 0});
  for (const auto& [str, id] : spec.vocab) {
    if (m->id_str_[id].offset != kNoId) {
      invalid_file(where + ": model.vocab: id " + std::to_string(id) + " is given to both " +
                   quote(spec.view(m->id_str_[id])) + " and " + quote(spec.view(str)));
    }
    m->id_str_[id] = str;  // offsets into spec.strings for now
  }
  // Copy the strings into an arena ordered by id (the merges' strings are not kept).
  m->arena_.reserve(bytes);
  for (auto& str : m->id_str_) {
    if (str.offset == kNoId) continue;
    const std::string_view t = spec.view(str);
    str.offset = static_cast<std::uint32_t>(m->arena_.size());
    m->arena_.append(t);
  }
  m->vocab_.reserve(spec.vocab.size());
  m->bmp_ids_.assign(0x10000, -1);
  std::fill(std::begin(m->byte_ids_), std::end(m->byte_ids_), -1);
  for (int id = 0; id < m->id_limit(); ++id) {
    if (!m->has_id(id)) continue;
    const std::string_view t = m->token(id);
    m->vocab_.set(t, id);
    if (!t.empty() && static_cast<unsigned char>(t[0]) < 0xF0 && t.size() <= 3 && is_valid_utf8(t)) {
      std::size_t p = 0;
      const char32_t c = utf8_decode(t, p);
      if (p == t.size()) m->bmp_ids_[c] = id;
    }
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    m->byte_ids_[b] = m->vocab_.get(name);
  }
  if (m->id_limit() > static_cast<int>(PairMap::kMaxId) || spec.merges.size() > PairMap::kMaxRank) {
    unsupported(where + ": model: " + std::to_string(m->id_limit()) + " ids and " + std::to_string(spec.merges.size()) +
                " merges is more than this tokenizer handles (" + std::to_string(PairMap::kMaxId) + " ids, " +
                std::to_string(PairMap::kMaxRank) + " merges)");
  }
  m->build_merges(spec, where);
  m->unk_token_ = std::move(spec.unk_token);
  m->fuse_unk_ = spec.fuse_unk;
  m->byte_fallback_ = spec.byte_fallback;
  m->ignore_merges_ = spec.ignore_merges;
  // Each token of a piece stands for a run of the piece's bytes no longer than its own string
  // (a byte token for one byte, an unfused unk for one character), so a piece of n bytes has at
  // least n / longest tokens, unless characters can be dropped (no unk, no byte tokens for them)
  // or a fused unk can stand for any number of them.
  bool all_bytes = m->byte_fallback_;
  for (const int id : m->byte_ids_) all_bytes = all_bytes && id >= 0;
  const bool unk = m->unk_token_ && m->vocab_.get(*m->unk_token_) >= 0 && !m->fuse_unk_;
  if (all_bytes || unk) {
    m->max_bytes_per_token_ = 4;
    for (const auto& str : m->id_str_) {
      if (str.offset != kNoId) m->max_bytes_per_token_ = std::max<std::size_t>(m->max_bytes_per_token_, str.size);
    }
  }
  return m;
}

void BpeModel::build_merges(const BpeSpec& spec, const std::string& where) {
  merges_.reserve(spec.merges.size());
  merged_.resize(spec.merges.size());
  static constexpr std::string_view kMarker = "\xE2\x96\x81";  // U+2581
  const bool has_marker = vocab_.get(kMarker) >= 0;
  // The lookups miss the cache; hashing a batch ahead and prefetching hides most of that.
  constexpr std::size_t kBatch = 32;
  std::uint64_t ha[kBatch], hb[kBatch], hj[kBatch];
  int ia[kBatch], ib[kBatch], im[kBatch];
  std::string joined[kBatch];
  const std::size_t n = spec.merges.size();
  for (std::size_t base = 0; base < n; base += kBatch) {
    const std::size_t count = std::min(kBatch, n - base);
    for (std::size_t k = 0; k < count; ++k) {
      const auto& [a, b] = spec.merges[base + k];
      ha[k] = vocab_.hash(spec.view(a));
      hb[k] = vocab_.hash(spec.view(b));
      joined[k].assign(spec.view(a)).append(spec.view(b));
      hj[k] = vocab_.hash(joined[k]);
      vocab_.prefetch(ha[k]);
      vocab_.prefetch(hb[k]);
      vocab_.prefetch(hj[k]);
    }
    for (std::size_t k = 0; k < count; ++k) {
      const auto& [a, b] = spec.merges[base + k];
      ia[k] = vocab_.get_hashed(spec.view(a), ha[k]);
      ib[k] = vocab_.get_hashed(spec.view(b), hb[k]);
      im[k] = vocab_.get_hashed(joined[k], hj[k]);
      if (ia[k] >= 0 && ib[k] >= 0) merges_.prefetch(static_cast<std::uint32_t>(ia[k]), static_cast<std::uint32_t>(ib[k]));
    }
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t rank = base + k;
      const std::string at = ia[k] < 0 || ib[k] < 0 ? where + ": model.merges[" + std::to_string(rank) + "]" : "";
      if (ia[k] < 0) invalid_file(at + ": token " + quote(spec.view(spec.merges[rank].first)) + " is not in the vocabulary");
      if (ib[k] < 0) invalid_file(at + ": token " + quote(spec.view(spec.merges[rank].second)) + " is not in the vocabulary");
      const int merged = im[k];
      if (merged < 0) {
        invalid_file(where + ": model.merges[" + std::to_string(rank) + "]: the merged token " + quote(joined[k]) +
                     " is not in the vocabulary");
      }
      merges_.set(static_cast<std::uint32_t>(ia[k]), static_cast<std::uint32_t>(ib[k]), static_cast<std::uint32_t>(rank));
      merged_[rank] = merged;
      // Which characters does some merge join to a following U+2581? (see can_cut_)
      const std::string& j = joined[k];
      if (!has_marker) continue;
      for (std::size_t p = j.find(kMarker, 1); p != std::string::npos; p = j.find(kMarker, p + 1)) {
        std::size_t q = p - 1;
        while (q > 0 && (static_cast<unsigned char>(j[q]) & 0xC0) == 0x80) --q;
        std::size_t r = q;
        const char32_t prev = is_valid_utf8(std::string_view(j).substr(q, p - q)) ? utf8_decode(j, r) : 0xFFFFFFFF;
        if (prev != kMetaspace) crossing_.push_back(prev);
      }
    }
  }
  std::sort(crossing_.begin(), crossing_.end());
  crossing_.erase(std::unique(crossing_.begin(), crossing_.end()), crossing_.end());
  can_cut_ = has_marker;
}

void BpeModel::save(ByteWriter& w) const {
  w.put_string(arena_);
  w.put_vector(id_str_);
  w.put_vector(vocab_.slots());
  w.put_vector(merges_.slots());
  w.put_vector(merged_);
  std::vector<std::uint32_t> chars;  // the single-character tokens, sparse (most of the BMP has none)
  std::vector<int> char_ids;
  for (std::size_t c = 0; c < bmp_ids_.size(); ++c) {
    if (bmp_ids_[c] < 0) continue;
    chars.push_back(static_cast<std::uint32_t>(c));
    char_ids.push_back(bmp_ids_[c]);
  }
  w.put_vector(chars);
  w.put_vector(char_ids);
  w.put(byte_ids_);
  w.put<std::uint8_t>(unk_token_.has_value());
  w.put_string(unk_token_.value_or(""));
  for (const bool b : {fuse_unk_, byte_fallback_, ignore_merges_, can_cut_}) w.put<std::uint8_t>(b);
  w.put_vector(crossing_);
  w.put<std::uint64_t>(max_bytes_per_token_);
}

std::unique_ptr<BpeModel> BpeModel::restore(ByteReader& r) {
  auto m = std::unique_ptr<BpeModel>(new BpeModel());
  m->arena_ = r.get_string();
  m->id_str_ = r.get_vector<BpeSpec::Str>();
  if (m->id_str_.size() > PairMap::kMaxId) return nullptr;
  for (const BpeSpec::Str& s : m->id_str_) {
    if (s.offset == kNoId) continue;
    // Inside the arena, and UTF-8 as every string of a JSON file is.
    if (std::uint64_t{s.offset} + s.size > m->arena_.size() || !is_valid_utf8(std::string_view(m->arena_).substr(s.offset, s.size))) {
      return nullptr;
    }
  }
  const BpeModel& model = *m;
  const auto valid = [&model](int id) { return model.has_id(id); };
  const auto valid_or_none = [&model](int id) { return id == -1 || model.has_id(id); };
  if (!m->vocab_.assign_slots(r.get_vector<std::uint64_t>(), valid)) return nullptr;
  std::vector<std::uint64_t> merge_slots = r.get_vector<std::uint64_t>();
  m->merged_ = r.get_vector<int>();
  if (m->merged_.size() > PairMap::kMaxRank || !std::all_of(m->merged_.begin(), m->merged_.end(), valid)) return nullptr;
  if (!m->merges_.assign_slots(std::move(merge_slots), static_cast<std::uint32_t>(m->id_limit()),
                               static_cast<std::uint32_t>(m->merged_.size()))) {
    return nullptr;
  }
  const std::vector<std::uint32_t> chars = r.get_vector<std::uint32_t>();
  const std::vector<int> char_ids = r.get_vector<int>();
  if (chars.size() != char_ids.size()) return nullptr;
  m->bmp_ids_.assign(0x10000, -1);
  for (std::size_t i = 0; i < chars.size(); ++i) {
    if (chars[i] >= 0x10000 || !valid(char_ids[i])) return nullptr;
    m->bmp_ids_[chars[i]] = char_ids[i];
  }
  r.get_into(m->byte_ids_);
  if (!std::all_of(std::begin(m->byte_ids_), std::end(m->byte_ids_), valid_or_none)) return nullptr;
  const bool has_unk = r.get_bool();
  std::string unk = r.get_string();
  if (!is_valid_utf8(unk)) return nullptr;
  if (has_unk) m->unk_token_ = std::move(unk);
  m->fuse_unk_ = r.get_bool();
  m->byte_fallback_ = r.get_bool();
  m->ignore_merges_ = r.get_bool();
  m->can_cut_ = r.get_bool();
  m->crossing_ = r.get_vector<char32_t>();
  if (!std::is_sorted(m->crossing_.begin(), m->crossing_.end())) return nullptr;
  m->max_bytes_per_token_ = r.get<std::uint64_t>();
  return m;
}

int BpeModel::char_id(char32_t c, std::string_view utf8) const {
  if (c < 0x10000) return bmp_ids_[c];
  return vocab_.get(utf8);
}

void BpeModel::encode(std::string_view piece, std::vector<int>& out, BpeScratch& s) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const int id = vocab_.get(piece);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  s.bytes_seen += piece.size();
  if (s.cache.empty() && s.bytes_seen > 8192) s.cache.resize(BpeScratch::kCacheSlots);
  // Cut before each U+2581 that follows a known character that no merge joins to a U+2581 (see
  // can_cut_): the parts merge independently, so each is encoded (or found in the cache) alone.
  static constexpr std::string_view kMarker = "\xE2\x96\x81";
  std::size_t start = 0;
  if (can_cut_) {
    for (std::size_t p = piece.find(kMarker, 1); p != std::string_view::npos; p = piece.find(kMarker, p + kMarker.size())) {
      std::size_t q = p - 1;
      while (q > 0 && (static_cast<unsigned char>(piece[q]) & 0xC0) == 0x80) --q;
      std::size_t r = q;
      const char32_t prev = utf8_decode(piece, r);
      if (prev == kMetaspace || char_id(prev, piece.substr(q, p - q)) < 0 ||
          std::binary_search(crossing_.begin(), crossing_.end(), prev)) {
        continue;
      }
      encode_segment(piece.substr(start, p - start), out, s);
      start = p;
    }
  }
  encode_segment(piece.substr(start), out, s);
}

void BpeModel::encode_segment(std::string_view text, std::vector<int>& out, BpeScratch& s) const {
  BpeScratch::CacheSlot* slot = nullptr;
  if (!s.cache.empty() && text.size() <= sizeof(slot->key)) {
    slot = &s.cache[std::hash<std::string_view>{}(text) & (BpeScratch::kCacheSlots - 1)];
    if (slot->key_size == text.size() && std::memcmp(slot->key, text.data(), text.size()) == 0) {
      out.insert(out.end(), slot->ids, slot->ids + slot->id_count);
      return;
    }
  }
  // Initial symbols, as upstream's merge_word builds them.
  s.symbols.clear();
  auto add = [&](int id) { s.symbols.push_back({id, -1, -1, true}); };
  int unk_id = -1;  // a pending (maybe fused) unk symbol
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t begin = pos;
    const char32_t c = utf8_decode(text, pos);
    const std::string_view ch = text.substr(begin, pos - begin);
    const int id = char_id(c, ch);
    if (id >= 0) {
      if (unk_id >= 0) {
        add(unk_id);
        unk_id = -1;
      }
      add(id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char b : ch) all = all && byte_ids_[static_cast<unsigned char>(b)] >= 0;
      if (all) {
        // Upstream adds these without first flushing a pending unk; so do we.
        for (char b : ch) add(byte_ids_[static_cast<unsigned char>(b)]);
        continue;
      }
    }
    if (unk_token_) {
      const int u = vocab_.get(*unk_token_);
      if (u < 0) invalid_file("the unk_token " + quote(*unk_token_) + " is not in the vocabulary");
      if (unk_id >= 0 && !fuse_unk_) add(unk_id);
      unk_id = u;
    }
    // Without an unk_token the character is dropped, as upstream does.
  }
  if (unk_id >= 0) add(unk_id);
  merge_segment(s, 0, s.symbols.size());
  const std::size_t before = out.size();
  for (const auto& sym : s.symbols) {
    if (sym.alive) out.push_back(sym.id);
  }
  const std::size_t count = out.size() - before;
  if (slot != nullptr && count <= std::size(slot->ids)) {
    slot->key_size = static_cast<std::uint8_t>(text.size());
    std::memcpy(slot->key, text.data(), text.size());
    slot->id_count = static_cast<std::uint8_t>(count);
    std::copy(out.begin() + static_cast<std::ptrdiff_t>(before), out.end(), slot->ids);
  }
}

// Short segments (most words): keep the symbols packed and scan for the lowest rank, leftmost
// first, which is the same order the heap gives, without its bookkeeping.
void BpeModel::merge_short(BpeScratch& s, std::size_t lo, std::size_t hi) const {
  std::uint32_t ids[kShortSegment], ranks[kShortSegment];
  std::size_t m = hi - lo;
  for (std::size_t i = 0; i < m; ++i) ids[i] = static_cast<std::uint32_t>(s.symbols[lo + i].id);
  for (std::size_t i = 0; i + 1 < m; ++i) merges_.prefetch(ids[i], ids[i + 1]);
  for (std::size_t i = 0; i + 1 < m; ++i) ranks[i] = merges_.get(ids[i], ids[i + 1]);
  while (m > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < m; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == PairMap::kNone) break;
    ids[best] = static_cast<std::uint32_t>(merged_[ranks[best]]);
    for (std::size_t i = best + 1; i + 1 < m; ++i) ids[i] = ids[i + 1];
    for (std::size_t i = best; i + 2 < m; ++i) ranks[i] = ranks[i + 1];
    --m;
    if (best > 0) merges_.prefetch(ids[best - 1], ids[best]);
    if (best + 1 < m) merges_.prefetch(ids[best], ids[best + 1]);
    if (best > 0) ranks[best - 1] = merges_.get(ids[best - 1], ids[best]);
    if (best + 1 < m) ranks[best] = merges_.get(ids[best], ids[best + 1]);
  }
  for (std::size_t i = 0; i < hi - lo; ++i) {
    s.symbols[lo + i].id = i < m ? static_cast<int>(ids[i]) : -1;
    s.symbols[lo + i].alive = i < m;
  }
}

void BpeModel::merge_segment(BpeScratch& s, std::size_t lo, std::size_t hi) const {
  if (hi - lo < 2) return;
  if (hi - lo <= kShortSegment) {
    merge_short(s, lo, hi);
    return;
  }
  auto* sym = s.symbols.data();
  for (std::size_t i = lo; i < hi; ++i) {
    sym[i].prev = i > lo ? static_cast<int>(i - 1) : -1;
    sym[i].next = i + 1 < hi ? static_cast<int>(i + 1) : -1;
  }
  auto& heap = s.heap;
  heap.clear();
  auto id = [&](int i) { return static_cast<std::uint32_t>(sym[i].id); };
  auto queue = [&](int left, std::uint32_t rank) {
    if (rank == PairMap::kNone) return;
    heap.push_back({rank, static_cast<std::uint32_t>(left), sym[left].id, sym[sym[left].next].id});
    std::push_heap(heap.begin(), heap.end(), CandidateAfter{});
  };
  // The table misses the cache: ask for every pair before looking any up.
  for (std::size_t i = lo; i + 1 < hi; ++i) merges_.prefetch(id(static_cast<int>(i)), id(static_cast<int>(i + 1)));
  for (std::size_t i = lo; i + 1 < hi; ++i) {
    queue(static_cast<int>(i), merges_.get(id(static_cast<int>(i)), id(static_cast<int>(i + 1))));
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), CandidateAfter{});
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    auto& left = sym[top.pos];
    if (!left.alive || left.id != top.left || left.next < 0 || sym[left.next].id != top.right) continue;
    auto& right = sym[left.next];
    left.id = merged_[top.rank];
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = static_cast<int>(top.pos);
    const int p = left.prev, pos = static_cast<int>(top.pos), n = left.next;
    if (p >= 0) merges_.prefetch(id(p), id(pos));
    if (n >= 0) merges_.prefetch(id(pos), id(n));
    if (p >= 0) queue(p, merges_.get(id(p), id(pos)));
    if (n >= 0) queue(pos, merges_.get(id(pos), id(n)));
  }
}

}  // namespace staticlm
