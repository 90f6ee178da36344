#include "text/unicode_normalize.h"

#include <utf8proc.h>

#include <string_view>
#include <utility>

#include "base/error.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

int combining_class(utf8proc_int32_t c) { return utf8proc_get_property(c)->combining_class; }

}  // namespace

void unicode_normalize(NormalizedText& t, UnicodeForm form) {
  if (t.text.empty()) return;
  const bool tracked = t.tracked();
  if (!tracked) t.origin.assign(t.text.size(), t.base);
  const bool compat = form == UnicodeForm::kNfkc || form == UnicodeForm::kNfkd;
  const bool compose = form == UnicodeForm::kNfc || form == UnicodeForm::kNfkc;
  const utf8proc_option_t decompose_opts = static_cast<utf8proc_option_t>(
      UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | (compat ? UTF8PROC_COMPAT : 0));

  // 1. Full decomposition, character by character, each part keeping its character's origin.
  std::vector<utf8proc_int32_t> cps;
  std::vector<std::uint32_t> origins;
  cps.reserve(t.text.size());
  origins.reserve(t.text.size());
  utf8proc_int32_t buf[32];
  std::size_t pos = 0;
  while (pos < t.text.size()) {
    const std::uint32_t o = t.origin[pos];
    const auto c = static_cast<utf8proc_int32_t>(utf8_decode(t.text, pos));
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n = utf8proc_decompose_char(c, buf, 32, decompose_opts, &boundclass);
    if (n < 0 || n > 32) internal_error("unicode normalization failed on U+" + std::to_string(c));
    for (utf8proc_ssize_t k = 0; k < n; ++k) {
      cps.push_back(buf[k]);
      origins.push_back(o);
    }
  }
  // 2. Canonical ordering: a stable sort of each run of non-starters by combining class.
  for (std::size_t i = 1; i < cps.size(); ++i) {
    for (std::size_t j = i; j > 0; --j) {
      const int a = combining_class(cps[j - 1]), b = combining_class(cps[j]);
      if (b == 0 || a <= b) break;
      std::swap(cps[j - 1], cps[j]);
      std::swap(origins[j - 1], origins[j]);
    }
  }
  // 3. Canonical composition. The output is the decomposed sequence with some starters replaced
  // by composites and the characters they absorbed dropped, in order: walk both to carry origins.
  std::vector<utf8proc_int32_t> out = cps;
  std::vector<std::uint32_t> out_origins;
  if (compose) {
    const utf8proc_ssize_t m = utf8proc_normalize_utf32(
        out.data(), static_cast<utf8proc_ssize_t>(out.size()), static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (m < 0) internal_error("unicode composition failed");
    out.resize(static_cast<std::size_t>(m));
    out_origins.reserve(out.size());
    std::vector<bool> absorbed(cps.size(), false);
    std::size_t j = 0;
    for (std::size_t k = 0; k < out.size(); ++k) {
      while (j < cps.size() && absorbed[j]) ++j;
      if (j >= cps.size()) internal_error("unicode composition produced more than it was given");
      out_origins.push_back(origins[j]);
      if (cps[j] != out[k]) {
        // A composite: the rest of its canonical decomposition was absorbed from further on.
        int boundclass = UTF8PROC_BOUNDCLASS_START;
        const utf8proc_ssize_t n = utf8proc_decompose_char(
            out[k], buf, 32, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE), &boundclass);
        for (utf8proc_ssize_t d = 1; d < n; ++d) {
          for (std::size_t i = j + 1; i < cps.size(); ++i) {
            if (!absorbed[i] && cps[i] == buf[d]) {
              absorbed[i] = true;
              break;
            }
          }
        }
      }
      ++j;
    }
  } else {
    out_origins = origins;
  }
  NormalizedText r;
  r.base = t.base;
  r.text.reserve(t.text.size());
  r.origin.reserve(t.text.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    utf8_append(r.text, static_cast<char32_t>(out[k]));
    r.origin.resize(r.text.size(), out_origins[k]);
  }
  if (!tracked) r.origin.clear();
  t = std::move(r);
}

}  // namespace staticlm
