#include "text/pre_tokenizer.h"

#include <algorithm>
#include <utility>

#include <utf8proc.h>

#include "text/byte_level.h"
#include "text/normalizer.h"
#include "text/utf8.h"

namespace staticlm {

std::unique_ptr<PreTokenizer> PreTokenizer::create(const PreTokenizerSpec& spec, const std::string& where) {
  auto p = std::unique_ptr<PreTokenizer>(new PreTokenizer());
  p->add(spec, where);
  return p;
}

void PreTokenizer::add(const PreTokenizerSpec& spec, const std::string& where) {
  using T = PreTokenizerSpec::Type;
  if (spec.type == T::kSequence) {
    for (std::size_t i = 0; i < spec.children.size(); ++i) {
      add(spec.children[i], where + ".pretokenizers[" + std::to_string(i) + "]");
    }
    return;
  }
  Step step;
  step.spec = spec;
  step.spec.children.clear();
  if (spec.type == T::kSplit) {
    // Upstream compiles a {"String": s} pattern as the escaped regex, so both go through Oniguruma.
    step.regex = spec.pattern.is_regex ? Regex::compile(spec.pattern.text, where + ".pattern")
                                       : Regex::literal(spec.pattern.text);
  } else if (spec.type == T::kByteLevel) {
    if (spec.use_regex) step.regex = Regex::compile(std::string(kByteLevelPattern), where + " (ByteLevel's pattern)");
  } else {
    utf8_append(step.replacement, spec.replacement);
  }
  steps_.push_back(std::move(step));
}

bool PreTokenizer::needs_origins() const {
  for (const Step& s : steps_) {
    if (s.spec.type == PreTokenizerSpec::Type::kMetaspace && s.spec.prepend_scheme == PrependScheme::kFirst) return true;
  }
  return false;
}

void PreTokenizer::pre_tokenize(std::vector<NormalizedText>& pieces) const {
  for (const Step& step : steps_) {
    std::vector<NormalizedText> next;
    next.reserve(pieces.size());
    for (NormalizedText& piece : pieces) apply(step, std::move(piece), next);
    pieces = std::move(next);
  }
}

namespace {

bool is_numeric(char32_t c) {
  const utf8proc_category_t k = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

// Each occurrence of the character `c` (as UTF-8 `cs`) is one match.
std::vector<std::pair<std::size_t, std::size_t>> char_matches(const std::string& text, const std::string& cs) {
  std::vector<std::pair<std::size_t, std::size_t>> m;
  for (std::size_t p = text.find(cs); p != std::string::npos; p = text.find(cs, p + cs.size())) {
    m.emplace_back(p, p + cs.size());
  }
  return m;
}

}  // namespace

void PreTokenizer::apply(const Step& step, NormalizedText&& piece, std::vector<NormalizedText>& out) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  if (step.spec.type == PreTokenizerSpec::Type::kSplit) {
    if (!piece.text.empty()) step.regex->find_all(piece.text, matches);
    std::vector<Cut> cuts = cuts_from_matches(piece.text.size(), matches);
    if (step.spec.invert) {
      for (Cut& c : cuts) c.second = !c.second;
    }
    split_by_cuts(piece, cuts, step.spec.behavior, out);
    return;
  }
  if (step.spec.type == PreTokenizerSpec::Type::kDigits) {
    // Upstream splits on Rust's char::is_numeric (general categories Nd, Nl, No), each such
    // character a match: alone (Isolated) or runs of them together (Contiguous).
    for (std::size_t p = 0; p < piece.text.size();) {
      const std::size_t at = p;
      if (is_numeric(utf8_decode(piece.text, p))) matches.emplace_back(at, p);
    }
    split_by_cuts(piece, cuts_from_matches(piece.text.size(), matches),
                  step.spec.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, out);
    return;
  }
  if (step.spec.type == PreTokenizerSpec::Type::kByteLevel) {
    // Upstream: a space in front of a piece without one, the pattern's pieces, then each byte
    // spelled as its character.
    if (step.spec.add_prefix_space && piece.text.compare(0, 1, " ") != 0) prepend_text(piece, " ");
    const std::size_t first = out.size();
    if (step.regex) {
      step.regex->find_all(piece.text, matches);
      split_by_cuts(piece, cuts_from_matches(piece.text.size(), matches), SplitBehavior::kIsolated, out);
    } else if (!piece.text.empty()) {
      out.push_back(std::move(piece));
    }
    for (std::size_t i = first; i < out.size(); ++i) byte_level_spell(out[i]);
    return;
  }
  // Metaspace: spaces become the replacement, maybe a replacement in front, then split before each.
  replace_ranges(piece, char_matches(piece.text, " "), step.replacement);
  const bool starts = piece.text.compare(0, step.replacement.size(), step.replacement) == 0;
  const PrependScheme scheme = step.spec.prepend_scheme;
  if (!starts && (scheme == PrependScheme::kAlways ||
                  (scheme == PrependScheme::kFirst && piece.original_start() == 0))) {
    prepend_text(piece, step.replacement);
  }
  if (!step.spec.split) {
    if (!piece.text.empty()) out.push_back(std::move(piece));
    return;
  }
  split_by_cuts(piece, cuts_from_matches(piece.text.size(), char_matches(piece.text, step.replacement)),
                SplitBehavior::kMergedWithNext, out);
}

std::vector<Cut> cuts_from_matches(std::size_t length, const std::vector<std::pair<std::size_t, std::size_t>>& matches) {
  std::vector<Cut> cuts;
  if (length == 0) {
    cuts.push_back({{0, 0}, false});
    return cuts;
  }
  std::size_t prev = 0;
  for (const auto& [s, e] : matches) {
    if (prev != s) cuts.push_back({{prev, s}, false});
    cuts.push_back({{s, e}, true});
    prev = e;
  }
  if (prev != length) cuts.push_back({{prev, length}, false});
  return cuts;
}

void split_by_cuts(const NormalizedText& piece, const std::vector<Cut>& cuts, SplitBehavior behavior,
                   std::vector<NormalizedText>& out) {
  // (range, remove) pairs, following NormalizedString::split.
  std::vector<Cut> splits;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Cut& c : cuts) splits.push_back({c.first, false});
      break;
    case SplitBehavior::kRemoved:
      splits = cuts;
      break;
    case SplitBehavior::kContiguous: {
      bool previous = false;
      for (const Cut& c : cuts) {
        if (c.second == previous && !splits.empty()) {
          splits.back().first.second = c.first.second;
        } else {
          splits.push_back({c.first, false});
        }
        previous = c.second;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous = false;
      for (const Cut& c : cuts) {
        if (c.second && !previous && !splits.empty()) {
          splits.back().first.second = c.first.second;
        } else {
          splits.push_back({c.first, false});
        }
        previous = c.second;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous = false;
      for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
        if (it->second && !previous && !splits.empty()) {
          splits.back().first.first = it->first.first;
        } else {
          splits.push_back({it->first, false});
        }
        previous = it->second;
      }
      std::reverse(splits.begin(), splits.end());
      break;
    }
  }
  for (const Cut& s : splits) {
    if (s.second || s.first.first == s.first.second) continue;
    out.push_back(piece.slice(s.first.first, s.first.second));
  }
}

}  // namespace staticlm
