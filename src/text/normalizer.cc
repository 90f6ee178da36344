#include "text/normalizer.h"

#include <cstdint>
#include <string>
#include <utility>

#include "base/error.h"

namespace staticlm {

std::unique_ptr<Normalizer> Normalizer::create(const NormalizerSpec& spec, const std::string& where) {
  auto n = std::unique_ptr<Normalizer>(new Normalizer());
  n->add(spec, where);
  return n;
}

void Normalizer::add(const NormalizerSpec& spec, const std::string& where) {
  using T = NormalizerSpec::Type;
  if (spec.type == T::kSequence) {
    for (std::size_t i = 0; i < spec.children.size(); ++i) {
      add(spec.children[i], where + ".normalizers[" + std::to_string(i) + "]");
    }
    return;
  }
  Step step;
  step.type = spec.type;
  step.content = spec.content;
  switch (spec.type) {
    case T::kReplace:
      step.regex = spec.pattern.is_regex ? Regex::compile(spec.pattern.text, where + ".pattern")
                                         : Regex::literal(spec.pattern.text);
      break;
    case T::kNfc: step.form = UnicodeForm::kNfc; break;
    case T::kNfd: step.form = UnicodeForm::kNfd; break;
    case T::kNfkc: step.form = UnicodeForm::kNfkc; break;
    case T::kNfkd: step.form = UnicodeForm::kNfkd; break;
    case T::kPrepend:
    case T::kSequence: break;
  }
  steps_.push_back(std::move(step));
}

void Normalizer::normalize(NormalizedText& t) const {
  using T = NormalizerSpec::Type;
  for (const Step& s : steps_) {
    switch (s.type) {
      case T::kReplace: replace_matches(t, *s.regex, s.content); break;
      case T::kPrepend: prepend_text(t, s.content); break;
      case T::kNfc:
      case T::kNfd:
      case T::kNfkc:
      case T::kNfkd: unicode_normalize(t, s.form); break;
      case T::kSequence: break;
    }
  }
}

void replace_matches(NormalizedText& t, const Regex& regex, const std::string& content) {
  if (t.text.empty()) return;  // upstream finds no match at all in an empty string
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  regex.find_all(t.text, matches);
  replace_ranges(t, matches, content);
}

namespace {
constexpr std::size_t kMaxNormalizerGrowth = 8;
std::size_t saturated_mul(std::size_t a, std::size_t b) { return b != 0 && a > SIZE_MAX / b ? SIZE_MAX / 2 : a * b; }
}  // namespace

void replace_ranges(NormalizedText& t, const std::vector<std::pair<std::size_t, std::size_t>>& matches,
                    const std::string& content) {
  if (t.text.empty() || matches.empty()) return;
  // A Replace step may grow the text (" " -> "\u2581" triples it); steps that multiply it (a
  // Sequence of Replaces each turning "x" into a thousand) are refused before they build it.
  std::size_t removed = 0;
  for (const auto& [s, e] : matches) removed += e - s;
  const std::size_t grown = t.text.size() - removed + saturated_mul(matches.size(), content.size());
  if (grown > kMaxNormalizerGrowth * t.text.size() + (std::size_t{1} << 20)) {
    invalid_file("tokenizer normalizer: a Replace step would grow " + std::to_string(t.text.size()) + " bytes of text to " +
                 std::to_string(grown) + " (more than " + std::to_string(kMaxNormalizerGrowth) + "x plus 1 MiB, the limit)");
  }
  if (!t.tracked()) {
    std::string r;
    r.reserve(t.text.size() + matches.size() * content.size());
    std::size_t prev = 0;
    for (const auto& [s, e] : matches) {
      r.append(t.text, prev, s - prev).append(content);
      prev = e;
    }
    r.append(t.text, prev, std::string::npos);
    t.text = std::move(r);
    return;
  }
  NormalizedText r;
  r.base = t.base;
  r.text.reserve(t.text.size() + matches.size() * content.size());
  r.origin.reserve(r.text.capacity());
  std::size_t prev = 0;
  for (const auto& [s, e] : matches) {
    r.text.append(t.text, prev, s - prev);
    r.origin.insert(r.origin.end(), t.origin.begin() + static_cast<std::ptrdiff_t>(prev),
                    t.origin.begin() + static_cast<std::ptrdiff_t>(s));
    const std::uint32_t o = e >= 1 ? t.origin[e - 1] : t.base;
    r.text.append(content);
    r.origin.resize(r.text.size(), o);
    prev = e;
  }
  r.text.append(t.text, prev, std::string::npos);
  r.origin.insert(r.origin.end(), t.origin.begin() + static_cast<std::ptrdiff_t>(prev), t.origin.end());
  t = std::move(r);
}

void prepend_text(NormalizedText& t, const std::string& prefix) {
  if (t.text.empty() || prefix.empty()) return;
  if (t.tracked()) t.origin.insert(t.origin.begin(), prefix.size(), t.origin[0]);
  t.text.insert(0, prefix);
}

}  // namespace staticlm
