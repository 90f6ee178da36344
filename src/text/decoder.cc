#include "text/decoder.h"

#include <utility>

#include "text/byte_level.h"
#include "text/utf8.h"

namespace staticlm {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xXX>" token, or -1. Upstream parses XX with Rust's u8::from_str_radix, which
// takes either case and a leading '+'.
int byte_token(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  if (t[3] == '+') return hex_digit(t[4]);
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void flush_bytes(std::string& bytes, std::vector<std::string>& out) {
  if (bytes.empty()) return;
  if (is_valid_utf8(bytes)) {
    out.push_back(bytes);
  } else {
    for (std::size_t i = 0; i < bytes.size(); ++i) out.emplace_back("\xEF\xBF\xBD");  // U+FFFD per byte
  }
  bytes.clear();
}

std::vector<char32_t> chars_of(const std::string& s) {
  std::vector<char32_t> cs;
  for (std::size_t p = 0; p < s.size();) cs.push_back(utf8_decode(s, p));
  return cs;
}

}  // namespace

std::unique_ptr<Decoder> Decoder::create(const DecoderSpec& spec, const std::string& where) {
  auto d = std::unique_ptr<Decoder>(new Decoder());
  d->add(spec, where);
  return d;
}

void Decoder::add(const DecoderSpec& spec, const std::string& where) {
  using T = DecoderSpec::Type;
  if (spec.type == T::kSequence) {
    for (std::size_t i = 0; i < spec.children.size(); ++i) {
      add(spec.children[i], where + ".decoders[" + std::to_string(i) + "]");
    }
    return;
  }
  Step step;
  step.spec = spec;
  step.spec.children.clear();
  if (spec.type == T::kReplace) {
    step.regex = spec.pattern.is_regex ? Regex::compile(spec.pattern.text, where + ".pattern")
                                       : Regex::literal(spec.pattern.text);
  } else if (spec.type == T::kStrip) {
    std::size_t p = 0;
    step.strip_char = utf8_decode(spec.content, p);
  } else if (spec.type == T::kMetaspace) {
    utf8_append(step.replacement, spec.replacement);
  }
  steps_.push_back(std::move(step));
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  using T = DecoderSpec::Type;
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  for (const Step& step : steps_) {
    std::vector<std::string> next;
    next.reserve(tokens.size());
    switch (step.spec.type) {
      case T::kReplace:
        for (std::string& t : tokens) {
          if (t.empty()) {
            next.push_back(std::move(t));
            continue;
          }
          step.regex->find_all(t, matches);
          std::string r;
          std::size_t prev = 0;
          for (const auto& [s, e] : matches) {
            r.append(t, prev, s - prev).append(step.spec.content);
            prev = e;
          }
          r.append(t, prev, std::string::npos);
          next.push_back(std::move(r));
        }
        break;
      case T::kByteFallback: {
        std::string bytes;
        for (std::string& t : tokens) {
          const int b = byte_token(t);
          if (b >= 0) {
            bytes.push_back(static_cast<char>(b));
            continue;
          }
          flush_bytes(bytes, next);
          next.push_back(std::move(t));
        }
        flush_bytes(bytes, next);
        break;
      }
      case T::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        next.push_back(std::move(all));
        break;
      }
      case T::kStrip:
        for (const std::string& t : tokens) {
          const std::vector<char32_t> cs = chars_of(t);
          std::size_t start_cut = 0;
          for (std::size_t i = 0; i < cs.size() && i < static_cast<std::size_t>(step.spec.start); ++i) {
            if (cs[i] != step.strip_char) break;
            start_cut = i + 1;
          }
          std::size_t stop_cut = cs.size();
          const std::size_t limit = std::min(static_cast<std::size_t>(step.spec.stop), cs.size() - start_cut);
          for (std::size_t i = 0; i < limit; ++i) {
            const std::size_t index = cs.size() - i - 1;
            if (cs[index] != step.strip_char) break;
            stop_cut = index;
          }
          std::string r;
          for (std::size_t i = start_cut; i < stop_cut; ++i) utf8_append(r, cs[i]);
          next.push_back(std::move(r));
        }
        break;
      case T::kMetaspace:
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          std::string r;
          for (char32_t c : chars_of(tokens[i])) {
            if (c != step.spec.replacement) {
              utf8_append(r, c);
            } else if (!(i == 0 && step.spec.prepend_scheme != PrependScheme::kNever)) {
              r.push_back(' ');
            }
          }
          next.push_back(std::move(r));
        }
        break;
      case T::kByteLevel: {
        // Upstream joins every token's bytes and reads them as UTF-8, lossily.
        std::string bytes;
        for (const std::string& t : tokens) bytes += byte_level_unspell(t);
        next.push_back(utf8_lossy(bytes));
        break;
      }
      case T::kSequence:
        next = std::move(tokens);
        break;
    }
    tokens = std::move(next);
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace staticlm
