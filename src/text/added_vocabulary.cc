#include "text/added_vocabulary.h"

#include <algorithm>

#include "text/regex.h"
#include "text/utf8.h"

namespace staticlm {

AddedVocabulary::AddedVocabulary(const std::vector<AddedTokenSpec>& tokens, const Normalizer* normalizer)
    : tokens_(tokens) {
  for (Trie& t : tries_) {
    t.root.fill(0);
    t.nodes.emplace_back();  // node 0: the root placeholder
  }
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    const AddedTokenSpec& tok = tokens_[i];
    if (tok.content.empty()) continue;  // upstream ignores empty tokens
    if (tok.normalized && normalizer != nullptr) {
      NormalizedText t = NormalizedText::original(tok.content, 0);
      normalizer->normalize(t);
      if (!t.text.empty()) insert(tries_[1], t.text, static_cast<int>(i));
    } else {
      insert(tries_[tok.normalized ? 1 : 0], tok.content, static_cast<int>(i));
    }
  }
}

void AddedVocabulary::insert(Trie& trie, std::string_view pattern, int token) {
  int node = 0;
  for (std::size_t k = 0; k < pattern.size(); ++k) {
    const auto b = static_cast<unsigned char>(pattern[k]);
    int child = 0;
    if (k == 0) {
      child = trie.root[b];
    } else {
      for (const auto& [byte, n] : trie.nodes[node].next) {
        if (byte == b) child = n;
      }
    }
    if (child == 0) {
      child = static_cast<int>(trie.nodes.size());
      trie.nodes.emplace_back();
      if (k == 0) {
        trie.root[b] = child;
      } else {
        trie.nodes[node].next.emplace_back(b, child);
      }
    }
    node = child;
  }
  // A later duplicate of the same string replaces the earlier one, as upstream's maps do.
  if (trie.nodes[node].token < 0) ++trie.count;
  trie.nodes[node].token = token;
}

int AddedVocabulary::longest_at(const Trie& trie, std::string_view text, std::size_t pos, std::size_t& length) {
  int node = trie.root[static_cast<unsigned char>(text[pos])];
  int best = -1;
  std::size_t k = pos + 1;
  while (node != 0) {
    if (trie.nodes[node].token >= 0) {
      best = trie.nodes[node].token;
      length = k - pos;
    }
    if (k >= text.size()) break;
    const auto b = static_cast<unsigned char>(text[k]);
    int child = 0;
    for (const auto& [byte, n] : trie.nodes[node].next) {
      if (byte == b) {
        child = n;
        break;
      }
    }
    node = child;
    ++k;
  }
  return best;
}

namespace {

// Code point that ends text[0, end) / starts text[begin, ...).
char32_t last_char(std::string_view text, std::size_t end) {
  std::size_t p = end - 1;
  while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
  return utf8_decode(text, p);
}

char32_t first_char(std::string_view text, std::size_t begin) { return utf8_decode(text, begin); }

}  // namespace

void AddedVocabulary::find(std::string_view text, bool normalized_pass, std::vector<Segment>& out) const {
  out.clear();
  const Trie& trie = tries_[normalized_pass ? 1 : 0];
  std::size_t start_offset = 0;
  std::size_t pos = 0;
  while (trie.count > 0 && pos < text.size()) {
    std::size_t len = 0;
    const int t = longest_at(trie, text, pos, len);
    if (t < 0) {
      ++pos;
      continue;
    }
    const AddedTokenSpec& tok = tokens_[t];
    std::size_t start = pos, stop = pos + len;
    pos = stop;  // matches never overlap, whatever is done with this one
    if (tok.single_word) {
      const bool start_space = start == 0 || !is_word_char(last_char(text, start));
      const bool stop_space = stop == text.size() || !is_word_char(first_char(text, stop));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) {
      std::size_t s = start;
      while (s > 0) {
        std::size_t p = s - 1;
        while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
        std::size_t q = p;
        if (!is_white_space(utf8_decode(text, q))) break;
        s = p;
      }
      start = std::max(s, start_offset);
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        std::size_t q = stop;
        if (!is_white_space(utf8_decode(text, q))) break;
        stop = q;
      }
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, tok.id});
    start_offset = stop;
  }
  if (start_offset != text.size() || out.empty()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace staticlm
