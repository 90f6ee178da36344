#include "text/bpe.h"

#include <algorithm>
#include <cstdio>

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

std::unique_ptr<BpeModel> BpeModel::create(BpeSpec&& spec, const std::string& where) {
  auto m = std::unique_ptr<BpeModel>(new BpeModel());
  int max_id = -1;
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0) invalid_file(where + ": model.vocab: token " + quote(token) + " has a negative id " + std::to_string(id));
    max_id = std::max(max_id, id);
  }
  m->id_to_token_.resize(static_cast<std::size_t>(max_id + 1));
  m->has_id_.assign(static_cast<std::size_t>(max_id + 1), false);
  for (auto& [token, id] : spec.vocab) {
    if (m->has_id_[id]) {
      invalid_file(where + ": model.vocab: id " + std::to_string(id) + " is given to both " +
                   quote(m->id_to_token_[id]) + " and " + quote(token));
    }
    m->id_to_token_[id] = std::move(token);
    m->has_id_[id] = true;
  }
  m->vocab_.reserve(spec.vocab.size());
  m->bmp_ids_.assign(0x10000, -1);
  std::fill(std::begin(m->byte_ids_), std::end(m->byte_ids_), -1);
  for (std::size_t id = 0; id < m->id_to_token_.size(); ++id) {
    if (!m->has_id_[id]) continue;
    const std::string& t = m->id_to_token_[id];
    m->vocab_.set(t, static_cast<int>(id));
    if (!t.empty() && is_valid_utf8(t)) {
      std::size_t p = 0;
      const char32_t c = utf8_decode(t, p);
      if (p == t.size() && c < 0x10000) m->bmp_ids_[c] = static_cast<int>(id);
    }
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    m->byte_ids_[b] = m->vocab_.get(name);
  }
  m->merges_.reserve(spec.merges.size());
  const int marker = m->vocab_.get("\xE2\x96\x81");  // U+2581
  std::string joined;
  for (std::size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const auto& [a, b] = spec.merges[rank];
    const int ia = m->vocab_.get(a), ib = m->vocab_.get(b);
    const std::string at = where + ": model.merges[" + std::to_string(rank) + "]";
    if (ia < 0) invalid_file(at + ": token " + quote(a) + " is not in the vocabulary");
    if (ib < 0) invalid_file(at + ": token " + quote(b) + " is not in the vocabulary");
    joined.assign(a).append(b);
    const int merged = m->vocab_.get(joined);
    if (merged < 0) invalid_file(at + ": the merged token " + quote(joined) + " is not in the vocabulary");
    m->merges_.set(static_cast<std::uint32_t>(ia), static_cast<std::uint32_t>(ib),
                   PairMap::Value{static_cast<std::uint32_t>(rank), merged});
    // Which characters does some merge join to a following U+2581?
    if (marker >= 0 && is_valid_utf8(joined)) {
      std::size_t p = 0;
      char32_t prev = 0;
      while (p < joined.size()) {
        const char32_t c = utf8_decode(joined, p);
        if (c == kMetaspace && p > 3 && prev != kMetaspace) m->crossing_.push_back(prev);
        prev = c;
      }
    }
  }
  std::sort(m->crossing_.begin(), m->crossing_.end());
  m->crossing_.erase(std::unique(m->crossing_.begin(), m->crossing_.end()), m->crossing_.end());
  m->can_cut_ = marker >= 0;
  m->unk_token_ = std::move(spec.unk_token);
  m->fuse_unk_ = spec.fuse_unk;
  m->byte_fallback_ = spec.byte_fallback;
  m->ignore_merges_ = spec.ignore_merges;
  return m;
}

const std::string* BpeModel::id_to_token(int id) const {
  if (id < 0 || id >= id_limit() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
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
  // Initial symbols, as upstream's merge_word builds them.
  s.symbols.clear();
  s.cuts.clear();
  s.cuts.push_back(0);
  auto add = [&](int id) { s.symbols.push_back({id, -1, -1, true}); };
  int unk_id = -1;  // a pending (maybe fused) unk symbol
  bool prev_known = false;
  char32_t prev_char = 0;
  std::size_t pos = 0;
  while (pos < piece.size()) {
    const std::size_t start = pos;
    const char32_t c = utf8_decode(piece, pos);
    const std::string_view text = piece.substr(start, pos - start);
    const int id = char_id(c, text);
    if (id >= 0) {
      if (unk_id >= 0) {
        add(unk_id);
        unk_id = -1;
      }
      if (can_cut_ && c == kMetaspace && prev_known && prev_char != kMetaspace &&
          !std::binary_search(crossing_.begin(), crossing_.end(), prev_char) && s.symbols.size() > s.cuts.back()) {
        s.cuts.push_back(s.symbols.size());
      }
      add(id);
      prev_known = true;
      prev_char = c;
      continue;
    }
    prev_known = false;
    if (byte_fallback_) {
      bool all = true;
      for (char b : text) all = all && byte_ids_[static_cast<unsigned char>(b)] >= 0;
      if (all) {
        // Upstream adds these without first flushing a pending unk; so do we.
        for (char b : text) add(byte_ids_[static_cast<unsigned char>(b)]);
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
  s.cuts.push_back(s.symbols.size());
  for (std::size_t k = 0; k + 1 < s.cuts.size(); ++k) merge_segment(s, s.cuts[k], s.cuts[k + 1]);
  for (const auto& sym : s.symbols) {
    if (sym.alive) out.push_back(sym.id);
  }
}

void BpeModel::merge_segment(BpeScratch& s, std::size_t lo, std::size_t hi) const {
  if (hi - lo < 2) return;
  auto* sym = s.symbols.data();
  for (std::size_t i = lo; i < hi; ++i) {
    sym[i].prev = i > lo ? static_cast<int>(i - 1) : -1;
    sym[i].next = i + 1 < hi ? static_cast<int>(i + 1) : -1;
  }
  auto& heap = s.heap;
  heap.clear();
  auto push = [&](int left) {
    const int right = sym[left].next;
    const PairMap::Value* v = merges_.get(static_cast<std::uint32_t>(sym[left].id), static_cast<std::uint32_t>(sym[right].id));
    if (v == nullptr) return;
    heap.push_back({v->rank, static_cast<std::uint32_t>(left), sym[left].id, sym[right].id});
    std::push_heap(heap.begin(), heap.end(), CandidateAfter{});
  };
  for (std::size_t i = lo; i + 1 < hi; ++i) push(static_cast<int>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), CandidateAfter{});
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    auto& left = sym[top.pos];
    if (!left.alive || left.id != top.left || left.next < 0 || sym[left.next].id != top.right) continue;
    auto& right = sym[left.next];
    left.id = merges_.get(static_cast<std::uint32_t>(top.left), static_cast<std::uint32_t>(top.right))->id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = static_cast<int>(top.pos);
    if (left.prev >= 0) push(left.prev);
    if (left.next >= 0) push(static_cast<int>(top.pos));
  }
}

}  // namespace staticlm
