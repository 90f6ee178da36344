#include "text/regex.h"

#include <oniguruma.h>

#include <mutex>

#include "base/error.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

void init_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return std::string(reinterpret_cast<const char*>(buf), n > 0 ? n : 0);
}

}  // namespace

std::unique_ptr<Regex> Regex::compile(std::string_view pattern, const std::string& what) {
  init_oniguruma();
  regex_t* reg = nullptr;
  OnigErrorInfo info{};
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int rc = onig_new(&reg, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                          OnigDefaultSyntax, &info);
  if (rc != ONIG_NORMAL) {
    invalid_file(what + ": bad regular expression \"" + std::string(pattern) + "\": " + onig_message(rc, &info));
  }
  return std::unique_ptr<Regex>(new Regex(reg));
}

std::unique_ptr<Regex> Regex::literal(std::string_view text) {
  auto r = std::unique_ptr<Regex>(new Regex(nullptr));
  r->literal_.assign(text);
  return r;
}

Regex::~Regex() {
  if (reg_ != nullptr) onig_free(static_cast<regex_t*>(reg_));
}

void Regex::find_all(std::string_view text, std::vector<std::pair<std::size_t, std::size_t>>& out) const {
  out.clear();
  if (reg_ == nullptr) {
    if (literal_.empty()) {
      // The empty pattern matches at every character boundary, the end included.
      for (std::size_t p = 0; p < text.size(); p += utf8_sequence_length(static_cast<unsigned char>(text[p]))) {
        out.emplace_back(p, p);
      }
      out.emplace_back(text.size(), text.size());
      return;
    }
    for (std::size_t p = text.find(literal_); p != std::string_view::npos; p = text.find(literal_, p + literal_.size())) {
      out.emplace_back(p, p + literal_.size());
    }
    return;
  }
  auto* reg = static_cast<regex_t*>(reg_);
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  OnigRegion* region = onig_region_new();
  std::size_t last_end = 0;
  bool have_last = false;
  std::size_t last_match_end = 0;
  while (last_end <= text.size()) {
    onig_region_clear(region);
    const int r = onig_search(reg, begin, end, begin + last_end, end, region, ONIG_OPTION_NONE);
    if (r < 0) break;  // ONIG_MISMATCH, or a search error (treated as no further match)
    const auto s = static_cast<std::size_t>(region->beg[0]);
    const auto e = static_cast<std::size_t>(region->end[0]);
    if (s == e && have_last && last_match_end == e) {
      // Step over one character (one byte at the very end, which ends the loop).
      last_end += last_end < text.size() ? utf8_sequence_length(static_cast<unsigned char>(text[last_end])) : 1;
      continue;
    }
    last_end = e;
    last_match_end = e;
    have_last = true;
    out.emplace_back(s, e);
  }
  onig_region_free(region, 1);
}

bool is_word_char(char32_t c) {
  static const std::unique_ptr<Regex> word =
      Regex::compile("\\A[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]", "is_word_char");
  std::string s;
  utf8_append(s, c);
  std::vector<std::pair<std::size_t, std::size_t>> m;
  word->find_all(s, m);
  return !m.empty();
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::vector<std::pair<char32_t, char32_t>> unicode_property_ranges(std::string_view name) {
  init_oniguruma();
  std::vector<std::pair<char32_t, char32_t>> out;
  std::string n(name);
  auto* p = reinterpret_cast<OnigUChar*>(n.data());
  const int ctype = ONIGENC_PROPERTY_NAME_TO_CTYPE(ONIG_ENCODING_UTF8, p, p + n.size());
  if (ctype < 0) return out;
  OnigCodePoint single_byte_limit = 0;
  const OnigCodePoint* ranges = nullptr;  // count, then that many lo, hi pairs
  if (ONIGENC_GET_CTYPE_CODE_RANGE(ONIG_ENCODING_UTF8, ctype, &single_byte_limit, &ranges) != 0 || ranges == nullptr) {
    return out;
  }
  for (OnigCodePoint i = 0; i < ranges[0]; ++i) out.emplace_back(ranges[1 + 2 * i], ranges[2 + 2 * i]);
  return out;
}

}  // namespace staticlm
