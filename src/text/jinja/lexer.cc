#include "text/jinja/lexer.h"

#include <cctype>
#include <cstdio>

#include "text/jinja/pystr.h"
#include "text/jinja/value.h"
#include "text/utf8.h"

namespace staticlm::jinja {
namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Source with line endings made "\n" and, unless kept, one final newline dropped (as jinja2).
std::string normalize(std::string_view source, bool keep_trailing_newline) {
  std::string s;
  s.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s += source[i];
    }
  }
  if (!keep_trailing_newline && !s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// Length of the Python whitespace run starting at pos.
std::size_t space_run(const std::string& s, std::size_t pos) {
  std::size_t p = pos;
  while (p < s.size()) {
    std::size_t q = p;
    if (!py::is_space(utf8_decode(s, q))) break;
    p = q;
  }
  return p - pos;
}

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name, const LexOptions& o)
      : s_(normalize(source, o.keep_trailing_newline)), name_(name), o_(o) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < s_.size()) {
      const std::size_t open = next_open(pos_);
      std::string text = s_.substr(pos_, (open == std::string::npos ? s_.size() : open) - pos_);
      if (open == std::string::npos) {
        emit_text(std::move(text));
        break;
      }
      const char kind = s_[open + 1];  // '{', '%' or '#'
      const char mod = open + 2 < s_.size() ? s_[open + 2] : '\0';
      const bool raw = kind == '%' && is_raw_begin(open);
      if (mod == '-') {
        text = py::strip(text, false, true);
      } else if (o_.lstrip_blocks && kind != '{' && mod != '+') {
        const std::size_t l = text.rfind('\n') + 1;  // npos + 1 == 0
        if ((l > 0 || line_starting) && text.find_first_not_of(" \t", l) == std::string::npos) text.resize(l);
      }
      emit_text(std::move(text));
      const int tag_line = line_at(open);
      pos_ = open + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        const std::size_t close = s_.find("#}", pos_);
        if (close == std::string::npos) fail_at(name_, tag_line, "the comment is never closed (missing '#}')");
        pos_ = close + 2;
        after_tag(s_[close - 1] == '-', s_[close - 1] == '+', true);
      } else if (raw) {
        lex_raw(tag_line);
      } else {
        lex_tag(kind == '%', tag_line);
      }
      line_starting = pos_ > 0 && s_[pos_ - 1] == '\n';
    }
    tokens_.push_back({Token::Type::kEnd, "", line_at(s_.size())});
    return std::move(tokens_);
  }

 private:
  std::size_t next_open(std::size_t from) const {
    for (std::size_t p = s_.find('{', from); p != std::string::npos; p = s_.find('{', p + 1)) {
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
    }
    return std::string::npos;
  }

  int line_at(std::size_t pos) {
    for (; line_pos_ < pos && line_pos_ < s_.size(); ++line_pos_) {
      if (s_[line_pos_] == '\n') ++line_;
    }
    return line_;
  }

  void emit_text(std::string text) {
    if (!text.empty()) tokens_.push_back({Token::Type::kText, std::move(text), line_at(pos_)});
  }

  // After a tag's closing delimiter: '-' strips all whitespace, trim_blocks one newline.
  void after_tag(bool strip, bool plus, bool block) {
    if (strip) {
      pos_ += space_run(s_, pos_);
    } else if (block && !plus && o_.trim_blocks && pos_ < s_.size() && s_[pos_] == '\n') {
      ++pos_;
    }
  }

  // Whether the tag at `open` is `{% raw %}` (with optional -/+ modifiers).
  bool is_raw_begin(std::size_t open) const {
    std::size_t p = open + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
    if (s_.compare(p, 3, "raw") != 0 || (p + 3 < s_.size() && is_name_char(s_[p + 3]))) return false;
    p += 3;
    while (p < s_.size() && std::isspace(static_cast<unsigned char>(s_[p]))) ++p;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    return s_.compare(p, 2, "%}") == 0;
  }

  // The body of {% raw %} up to {% endraw %}, as text. jinja2 applies no trim_blocks after
  // `raw %}`; `-%}` strips; the endraw tag follows the usual rules.
  void lex_raw(int line) {
    const std::size_t close = s_.find("%}", pos_);
    const bool strip_after = s_[close - 1] == '-';
    pos_ = close + 2;
    if (strip_after) pos_ += space_run(s_, pos_);
    for (std::size_t p = s_.find("{%", pos_); p != std::string::npos; p = s_.find("{%", p + 2)) {
      std::size_t q = p + 2;
      const char mod = q < s_.size() ? s_[q] : '\0';
      if (mod == '-' || mod == '+') ++q;
      while (q < s_.size() && std::isspace(static_cast<unsigned char>(s_[q]))) ++q;
      if (s_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < s_.size() && std::isspace(static_cast<unsigned char>(s_[q]))) ++q;
      const char end_mod = q < s_.size() ? s_[q] : '\0';
      if (end_mod == '-' || end_mod == '+') ++q;
      if (s_.compare(q, 2, "%}") != 0) continue;
      std::string text = s_.substr(pos_, p - pos_);
      if (mod == '-') {
        text = py::strip(text, false, true);
      } else if (o_.lstrip_blocks && mod != '+') {
        const std::size_t l = text.rfind('\n') + 1;
        if (text.find_first_not_of(" \t", l) == std::string::npos && (l > 0)) text.resize(l);
      }
      if (!text.empty()) tokens_.push_back({Token::Type::kText, std::move(text), line});
      pos_ = q + 2;
      after_tag(end_mod == '-', end_mod == '+', true);
      return;
    }
    fail_at(name_, line, "{% raw %} is never closed (missing {% endraw %})");
  }

  void lex_tag(bool block, int line) {
    tokens_.push_back({block ? Token::Type::kBlockBegin : Token::Type::kVarBegin, "", line});
    std::string open;  // the closers of the open brackets: a '}}' inside a dict literal does not end the tag
    while (true) {
      while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ >= s_.size()) fail_at(name_, line, std::string("the tag is never closed (missing '") + (block ? "%}" : "}}") + "')");
      const int at = line_at(pos_);
      const std::string_view rest = std::string_view(s_).substr(pos_);
      const std::string_view close = block ? "%}" : "}}";
      if (open.empty()) {
        const bool minus = rest.size() > 2 && (rest[0] == '-' || rest[0] == '+') && rest.substr(1, 2) == close;
        if (minus || rest.substr(0, 2) == close) {
          const char mod = minus ? rest[0] : '\0';
          pos_ += minus ? 3 : 2;
          tokens_.push_back({block ? Token::Type::kBlockEnd : Token::Type::kVarEnd, "", at});
          after_tag(mod == '-', mod == '+', block);
          return;
        }
      }
      const char c = rest[0];
      if (is_name_start(c)) {
        std::size_t n = 1;
        while (n < rest.size() && is_name_char(rest[n])) ++n;
        tokens_.push_back({Token::Type::kName, std::string(rest.substr(0, n)), at});
        pos_ += n;
      } else if (is_digit(c)) {
        lex_number(at);
      } else if (c == '\'' || c == '"') {
        lex_string(at);
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                           "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : kOps) {
          const std::string_view o(op);
          if (rest.substr(0, o.size()) == o) {
            if (o == "(" || o == "[" || o == "{") open += o == "(" ? ')' : o == "[" ? ']' : '}';
            if (o == ")" || o == "]" || o == "}") {
              if (open.empty()) fail_at(name_, at, "unexpected '" + std::string(o) + "'");
              // jinja2's lexer: a closer that is not the innermost open bracket's is an error here
              // (so "[1, %}" fails where the tag ends, not at the end of the file).
              if (open.back() != o[0]) fail_at(name_, at, "unexpected '" + std::string(o) + "', expected '" + open.back() + "'");
              open.pop_back();
            }
            tokens_.push_back({Token::Type::kOperator, std::string(o), at});
            pos_ += o.size();
            found = true;
            break;
          }
        }
        if (!found) fail_at(name_, at, "unexpected character '" + std::string(1, c) + "'");
      }
    }
  }

  void lex_number(int line) {
    std::size_t p = pos_;
    auto digits = [&] {
      while (p < s_.size() && (is_digit(s_[p]) || (s_[p] == '_' && p + 1 < s_.size() && is_digit(s_[p + 1])))) ++p;
    };
    digits();
    bool is_float = false;
    if (p + 1 < s_.size() && s_[p] == '.' && is_digit(s_[p + 1]) && !(pos_ > 0 && s_[pos_ - 1] == '.')) {
      is_float = true;
      ++p;
      digits();
    }
    if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
      std::size_t q = p + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && is_digit(s_[q])) {
        is_float = true;
        p = q;
        digits();
      }
    }
    std::string text;
    for (std::size_t i = pos_; i < p; ++i) {
      if (s_[i] != '_') text += s_[i];
    }
    tokens_.push_back({is_float ? Token::Type::kFloat : Token::Type::kInt, text, line});
    pos_ = p;
  }

  void lex_string(int line) {
    const char quote = s_[pos_];
    std::string value;
    std::size_t p = pos_ + 1;
    while (true) {
      if (p >= s_.size()) fail_at(name_, line, "the string is never closed");
      const char c = s_[p];
      if (c == quote) break;
      if (c != '\\' || p + 1 >= s_.size()) {
        value += c;
        ++p;
        continue;
      }
      const char e = s_[p + 1];
      p += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (p + n > s_.size()) fail_at(name_, line, "truncated \\" + std::string(1, e) + " escape");
          const std::string hex = s_.substr(p, n);
          if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
            fail_at(name_, line, "bad \\" + std::string(1, e) + " escape: '" + hex + "' is not hexadecimal");
          }
          const auto cp = std::stoul(hex, nullptr, 16);
          // A string the engine holds is UTF-8: no surrogates, nothing past U+10FFFF.
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            fail_at(name_, line, "bad \\" + std::string(1, e) + " escape: U+" + hex + " is not a character");
          }
          utf8_append(value, static_cast<char32_t>(cp));
          p += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits: \0, \101
            char32_t cp = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && p < s_.size() && s_[p] >= '0' && s_[p] <= '7'; ++k) cp = cp * 8 + static_cast<char32_t>(s_[p++] - '0');
            utf8_append(value, cp);
          } else if (static_cast<unsigned char>(e) >= 0x80) {
            // jinja2 decodes a literal as source.encode("ascii", "backslashreplace") through
            // "unicode-escape": a backslash before a non-ASCII character pairs with the one
            // backslashreplace writes, leaving \ and the code point's hex ("\é" is \xe9).
            std::size_t at = p - 1;
            const char32_t cp = utf8_decode(s_, at);
            char hex[16];
            std::snprintf(hex, sizeof hex, cp < 0x100 ? "x%02x" : cp < 0x10000 ? "u%04x" : "U%08x", static_cast<unsigned>(cp));
            value += '\\';
            value += hex;
            p = at;
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    tokens_.push_back({Token::Type::kString, std::move(value), line});
    pos_ = p + 1;
  }

  std::string s_;
  const std::string& name_;
  LexOptions o_;
  std::size_t pos_ = 0;
  std::vector<Token> tokens_;
  std::size_t line_pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<Token> lex_template(std::string_view source, const std::string& name, const LexOptions& options) {
  return Lexer(source, name, options).run();
}

}  // namespace staticlm::jinja
