#include "text/jinja/pprint.h"

#include <algorithm>
#include <string_view>

#include "text/jinja/limits.h"
#include "text/jinja/pystr.h"
#include "text/utf8.h"

namespace staticlm::jinja {

namespace {

constexpr std::size_t kWidth = 80;

// pprint's _safe_key: Python's < where it works, else the types' names ("<class 'int'>" sorts
// before "<class 'str'>"); values of one type that do not compare keep their order.
bool safe_less(const Value& a, const Value& b) {
  try {
    return values_less(a, b);
  } catch (const TemplateError&) {
    return a.type_name() < b.type_name();
  }
}

// A dict's items as pprint walks them: sorted by key (the keys are unique).
std::vector<std::pair<Value, Value>> sorted_items(const DictObject& d) {
  std::vector<std::pair<Value, Value>> items = d.items;
  std::stable_sort(items.begin(), items.end(), [](const auto& x, const auto& y) { return safe_less(x.first, y.first); });
  return items;
}

bool is_plain_dict(const Value& v) { return v.is_dict() && !v.dict_object().is_namespace; }

// pprint's _safe_repr: repr with every plain dict's keys sorted.
std::string safe_repr(const Value& v, int depth) {
  if (depth > kMaxDataDepth) fail("pprint: lists and dicts nested more than " + std::to_string(kMaxDataDepth) + " deep (the limit)");
  if (v.is_list() && !v.view_type().empty()) return v.repr();
  if (v.is_list()) {
    std::string out = v.is_tuple() ? "(" : "[";
    const auto& items = v.list();
    for (std::size_t i = 0; i < items.size(); ++i) {
      out += (i ? ", " : "") + safe_repr(items[i], depth + 1);
      check_string_size(out.size(), "pprint", 0);
    }
    if (v.is_tuple() && items.size() == 1) out += ",";
    return out + (v.is_tuple() ? ")" : "]");
  }
  if (is_plain_dict(v)) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, x] : sorted_items(v.dict_object())) {
      out += (first ? "" : ", ") + safe_repr(k, depth + 1) + ": " + safe_repr(x, depth + 1);
      check_string_size(out.size(), "pprint", 0);
      first = false;
    }
    return out + "}";
  }
  return v.repr();
}

class Printer {
 public:
  std::string out;

  // pprint's _format: the repr when it fits in what is left of the line, else the type's layout.
  void format(const Value& v, std::size_t indent, std::size_t allowance, int level) {
    const std::string rep = safe_repr(v, level);
    const std::size_t used = indent + allowance;
    if (utf8_length(rep) > (kWidth > used ? kWidth - used : 0)) {
      if (is_plain_dict(v)) return print_dict(v, indent, allowance, level + 1);
      if (v.is_list() && v.view_type().empty()) return print_items(v, indent, allowance, level + 1);
      if (v.is_string() && !v.is_markup()) return print_string(v.as_string(), indent, allowance, level + 1);
    }
    write(rep);
  }

 private:
  void write(const std::string& s) {
    out += s;
    check_string_size(out.size(), "pprint", 0);
  }

  void print_dict(const Value& v, std::size_t indent, std::size_t allowance, int level) {
    write("{");
    const auto items = sorted_items(v.dict_object());
    indent += 1;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const bool last = i + 1 == items.size();
      const std::string rep = safe_repr(items[i].first, level);
      write(rep + ": ");
      format(items[i].second, indent + utf8_length(rep) + 2, last ? allowance + 1 : 1, level);
      if (!last) write(",\n" + std::string(indent, ' '));
    }
    write("}");
  }

  // A list or a tuple: pprint's _pprint_list / _pprint_tuple and _format_items (not compact).
  void print_items(const Value& v, std::size_t indent, std::size_t allowance, int level) {
    const bool tuple = v.is_tuple();
    const auto& items = v.list();
    const std::string end = tuple ? (items.size() == 1 ? ",)" : ")") : "]";
    write(tuple ? "(" : "[");
    allowance += end.size();
    indent += 1;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const bool last = i + 1 == items.size();
      if (i > 0) write(",\n" + std::string(indent, ' '));
      format(items[i], indent, last ? allowance : 1, level);
    }
    write(end);
  }

  // pprint's _pprint_str: each line of the string, and a line too long for the width cut after
  // runs of whitespace, as adjacent literals (in parentheses at the top level).
  void print_string(const std::string& s, std::size_t indent, std::size_t allowance, int level) {
    if (s.empty()) return write(repr_of(s));
    const std::vector<std::string> lines = py::splitlines(s, true);
    if (level == 1) {
      indent += 1;
      allowance += 1;
    }
    const std::size_t max_width = kWidth > indent ? kWidth - indent : 0;
    std::size_t max_width1 = max_width;
    std::vector<std::string> chunks;
    std::string rep;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const bool last_line = i + 1 == lines.size();
      rep = repr_of(lines[i]);
      if (last_line) max_width1 = max_width1 > allowance ? max_width1 - allowance : 0;
      if (utf8_length(rep) <= max_width1) {
        chunks.push_back(rep);
        continue;
      }
      const std::vector<std::string> parts = whitespace_parts(lines[i]);
      std::size_t max_width2 = max_width;
      std::string current;
      for (std::size_t j = 0; j < parts.size(); ++j) {
        const std::string candidate = current + parts[j];
        if (j + 1 == parts.size() && last_line) max_width2 = max_width2 > allowance ? max_width2 - allowance : 0;
        if (utf8_length(repr_of(candidate)) > max_width2) {
          if (!current.empty()) chunks.push_back(repr_of(current));
          current = parts[j];
        } else {
          current = candidate;
        }
      }
      if (!current.empty()) chunks.push_back(repr_of(current));
    }
    if (chunks.size() == 1) return write(rep);
    if (level == 1) write("(");
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (i > 0) write("\n" + std::string(indent, ' '));
      write(chunks[i]);
    }
    if (level == 1) write(")");
  }

  static std::string repr_of(const std::string& s) { return Value(s).repr(); }

  // re.findall(r'\S*\s*', line) without its final empty match: runs of non-space characters,
  // each with the whitespace after it.
  static std::vector<std::string> whitespace_parts(const std::string& line) {
    std::vector<std::string> parts;
    std::size_t pos = 0;
    while (pos < line.size()) {
      const std::size_t start = pos;
      bool in_space = false;
      while (pos < line.size()) {
        std::size_t next = pos;
        const bool space = py::is_space(utf8_decode(line, next));
        if (in_space && !space) break;
        in_space = in_space || space;
        pos = next;
      }
      parts.push_back(line.substr(start, pos - start));
    }
    return parts;
  }
};

}  // namespace

std::string pformat(const Value& v) {
  Printer p;
  p.format(v, 0, 0, 0);
  return p.out;
}

}  // namespace staticlm::jinja
