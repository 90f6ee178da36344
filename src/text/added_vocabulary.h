// AddedVocabulary: the tokenizer.json "added_tokens", matched as whole strings before the model
// sees the text, with the `tokenizers` library's rules: leftmost-longest, non-overlapping matches;
// tokens with normalized=false are found in the raw input, the others in the normalized text
// (against their own normalized form); single_word, lstrip and rstrip as upstream.
// Owns its tries; find() is const and thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/normalizer.h"
#include "text/tokenizer_spec.h"

namespace staticlm {

class AddedVocabulary {
 public:
  // `tokens` carry their final ids. `normalizer` (may be null) gives the form that tokens with
  // normalized=true are matched in.
  AddedVocabulary(const std::vector<AddedTokenSpec>& tokens, const Normalizer* normalizer);

  struct Segment {
    std::size_t begin = 0, end = 0;
    int id = -1;  // the added token's id, or -1 for text between tokens
  };

  // Cuts `text` into text segments and added tokens, covering all of it; which tokens are
  // looked for depends on the pass. Segments may be empty; callers drop those.
  void find(std::string_view text, bool normalized_pass, std::vector<Segment>& out) const;

  bool has_normalized_tokens() const { return !tries_[1].nodes.empty() && tries_[1].count > 0; }

 private:
  struct Node {
    int token = -1;                                    // index into tokens_, or -1
    std::vector<std::pair<unsigned char, int>> next;  // byte -> node
  };
  struct Trie {
    std::array<int, 256> root{};  // byte -> node, 0 = none (node 0 is the unused root)
    std::vector<Node> nodes;
    std::size_t count = 0;
  };
  static void insert(Trie& trie, std::string_view pattern, int token);
  // Longest pattern starting at text[pos]: token index and length, or -1.
  static int longest_at(const Trie& trie, std::string_view text, std::size_t pos, std::size_t& length);

  std::vector<AddedTokenSpec> tokens_;
  Trie tries_[2];  // [0]: raw input (normalized=false), [1]: normalized text
};

}  // namespace staticlm
