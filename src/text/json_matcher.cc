#include "text/json_matcher.h"

#include <algorithm>
#include <bit>
#include <string>

namespace staticlm {

namespace {

bool is_ws(unsigned char b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }

constexpr const char* kLiterals[] = {"true", "false", "null"};

// String flags.
constexpr std::uint8_t kKey = 0x80;       // an object's key
constexpr std::uint8_t kDiverged = 0x40;  // a key that is none of the listed properties
constexpr std::uint8_t kEscape = 0x07;    // 0 plain, 1 after '\', 2..5 a \u escape's digits
// What the next bytes of a string must be beyond the plain rules (flags bits 3-5). Inside a
// UTF-8 character (phase > 0): kFirst* narrow its first continuation byte (no overlong forms,
// no UTF-16 surrogates, nothing past U+10FFFF). Else: a \u escape that may be a surrogate
// (kMaybeSurrogate: first digit d; kHigh: D800-DBFF) and the \u dc00-dfff that must follow a
// high one (kLowBackslash .. kLowC: its '\', 'u', 'd', then c-f). Readers refuse lone surrogates.
constexpr std::uint8_t kPending = 0x38;
enum : std::uint8_t {
  kFirstA0 = 1, kFirst80To9F, kFirst90, kFirst80To8F,  // after E0, ED, F0, F4
  kMaybeSurrogate = 1, kHigh, kLowBackslash, kLowU, kLowD, kLowC
};

// Object phases.
enum : std::uint8_t { kKeyOrEnd, kKeyNext, kColon, kMember, kCommaOrEnd };
// An object frame's `c` after a key that no property lists and its key pattern matches
// (-1: one it does not match; >= 0: a listed property).
constexpr std::int64_t kPatternKey = -2;
// Array phases (kItemsDone: after an item).
enum : std::uint8_t { kItemOrEnd, kItemNext, kItemsDone = 3 };
// Number states: accepting ones are 2 (a lone 0), 3 (integer digits), 5 (fraction), 8 (exponent).
bool accepting(std::int32_t state) { return state == 2 || state == 3 || state == 5 || state == 8; }

// Keys take one spelling of each character, so that two keys are one key exactly when their
// texts are equal: \u escapes only for the control characters that have no short escape,
// in lowercase (JSON's canonical form, as json.dumps and nlohmann write it), and no "\/".
// `esc`: which of the four digits `byte` is (2..5); `previous`: the byte before it.
bool canonical_key_escape(std::uint8_t esc, unsigned char byte, char previous) {
  switch (esc) {
    case 2:
    case 3: return byte == '0';
    case 4: return byte == '0' || byte == '1';
    default:
      if (byte >= 'A' && byte <= 'F') return false;
      return previous == '1' || std::string_view("89acd").find(static_cast<char>(byte)) == std::string_view::npos;
  }
}

}  // namespace

JsonMatcher::JsonMatcher(const JsonSchema& schema) : schema_(&schema) {
  Frame f;
  f.node = schema.root;
  stack_.push_back(f);
}

const JsonSchemaNode* JsonMatcher::node(int index) const {
  return index >= 0 ? &schema_->nodes[static_cast<std::size_t>(index)] : nullptr;
}

bool JsonMatcher::feed_path(unsigned char byte, std::vector<JsonMatcher>& forks) {
  forks_ = &forks;
  const bool ok = !done_ && step(byte);
  forks_ = nullptr;
  return ok;
}

bool JsonMatcher::feed(unsigned char byte) {
  std::vector<JsonMatcher> forks;
  if (others_.empty()) {
    const bool ok = feed_path(byte, forks);
    if (forks.empty()) return ok;  // the common case: one reading
    others_ = std::move(forks);
    if (!ok) {
      // This reading failed: the first fork takes its place.
      JsonMatcher first = std::move(others_.front());
      others_.erase(others_.begin());
      stack_ = std::move(first.stack_), given_ = std::move(first.given_), done_ = first.done_;
    }
    if (others_.size() > kMaxReadings) others_.erase(others_.begin() + kMaxReadings, others_.end());
    return true;
  }
  std::vector<JsonMatcher> readings = std::move(others_);
  others_.clear();
  JsonMatcher self = *this;
  readings.insert(readings.begin(), std::move(self));
  std::vector<JsonMatcher> kept;
  for (JsonMatcher& r : readings) {
    if (r.feed_path(byte, forks)) kept.push_back(std::move(r));
  }
  for (JsonMatcher& f : forks) kept.push_back(std::move(f));
  if (kept.empty()) {
    // No reading takes the byte; the matcher stays as it was (callers feed no further).
    others_ = std::vector<JsonMatcher>(std::make_move_iterator(readings.begin() + 1), std::make_move_iterator(readings.end()));
    return false;
  }
  stack_ = std::move(kept.front().stack_), given_ = std::move(kept.front().given_), done_ = kept.front().done_;
  kept.erase(kept.begin());
  if (kept.size() > kMaxReadings) kept.erase(kept.begin() + kMaxReadings, kept.end());
  others_ = std::move(kept);
  return true;
}

bool JsonMatcher::complete() const {
  if (path_complete()) return true;
  return std::any_of(others_.begin(), others_.end(), [](const JsonMatcher& m) { return m.path_complete(); });
}

bool JsonMatcher::finished() const {
  return done_ && std::all_of(others_.begin(), others_.end(), [](const JsonMatcher& m) { return m.done_; });
}

bool JsonMatcher::path_complete() const {
  if (done_) return true;
  if (stack_.size() != 1) return false;
  const Frame& f = stack_.back();
  if (f.kind == Kind::kNumber) return accepting(f.a) && number_in_range(f);
  if (f.kind == Kind::kEnum) return node(f.node)->enum_values[static_cast<std::size_t>(f.a)].size() == static_cast<std::size_t>(f.c);
  return false;
}

std::int64_t JsonMatcher::string_room() const {
  std::int64_t room = path_string_room();
  for (const JsonMatcher& m : others_) room = std::min(room, m.path_string_room());
  return room;
}

// f.ws: 0 none yet, 1 one space, 2 + n a newline and n spaces or tabs.
std::int64_t JsonMatcher::path_string_room() const {
  if (done_ || stack_.back().kind != Kind::kString) return -1;
  const Frame& f = stack_.back();
  if ((f.flags & (kEscape | kPending)) != 0 || f.phase != 0) return -1;
  if (f.flags & kKey) {
    // A key where the object takes other keys than the listed ones: any plain characters go on
    // (which key it is, and whether the object has it already, is told at its closing quote).
    const Frame& object = stack_[stack_.size() - 2];
    if (const JsonSchemaNode* n = node(object.node); n && n->key_pattern >= 0) return -1;  // every byte checked
    return key_allowed(object, -1) ? INT64_MAX : -1;
  }
  const JsonSchemaNode* n = node(f.node);
  if (n && (n->format != JsonFormat::kNone || n->pattern >= 0)) return -1;  // every byte checked
  return n && n->max_length >= 0 ? n->max_length - f.c : INT64_MAX;
}

bool JsonMatcher::whitespace(Frame& f, unsigned char byte) {
  if (f.ws == 0 && (byte == ' ' || byte == '\n')) {
    f.ws = byte == ' ' ? 1 : 2;
    return true;
  }
  if (f.ws >= 2 && f.ws < 2 + kMaxIndent && (byte == ' ' || byte == '\t')) {
    ++f.ws;
    return true;
  }
  return false;
}

bool JsonMatcher::child_done() {
  const Frame item = stack_.back();
  stack_.pop_back();
  if (stack_.empty()) {
    done_ = true;
    return true;
  }
  Frame& p = stack_.back();
  if (p.kind == Kind::kObject) {
    p.phase = kCommaOrEnd;
  } else if (p.kind == Kind::kArray) {
    if (const JsonSchemaNode* n = node(p.node); n && n->unique_items) {
      // An item of a uniqueItems array: not one given before (its value's identity: the hash of
      // a string's text, an integer's value (-0 is 0), an enum value's or a literal's index).
      const Given g = {item.kind == Kind::kNumber ? static_cast<std::uint64_t>(item.flags & 2 ? 0 - item.seen : item.seen)
                       : item.kind == Kind::kString ? item.seen
                                                    : static_cast<std::uint64_t>(item.a),
                       static_cast<std::int32_t>(stack_.size() - 1), static_cast<std::uint8_t>(item.kind)};
      if (given(g)) return false;
      given_.push_back(g);
    }
    ++p.c;
    p.phase = kItemsDone;
  }
  return true;
}

bool JsonMatcher::given(const Given& g) const {
  return std::any_of(given_.begin(), given_.end(),
                     [&](const Given& x) { return x.depth == g.depth && x.kind == g.kind && x.value == g.value; });
}

std::int32_t JsonMatcher::unique_item_depth() const {
  if (stack_.size() < 2) return -1;
  const Frame& p = stack_[stack_.size() - 2];
  const JsonSchemaNode* n = p.kind == Kind::kArray ? node(p.node) : nullptr;
  return n && n->unique_items ? static_cast<std::int32_t>(stack_.size() - 2) : -1;
}

bool JsonMatcher::step(unsigned char byte) {
  Frame& f = stack_.back();
  switch (f.kind) {
    case Kind::kValue:
      if (is_ws(byte)) return whitespace(f, byte);
      return start_value(f, byte);
    case Kind::kObject:
      if (is_ws(byte)) return whitespace(f, byte);
      f.ws = 0;
      return object_byte(f, byte);
    case Kind::kArray:
      if (is_ws(byte)) return whitespace(f, byte);
      f.ws = 0;
      return array_byte(f, byte);
    case Kind::kString: {
      const bool one_spelling = (f.flags & kKey) || unique_item_depth() >= 0;
      if (!one_spelling) return string_byte(f, byte, false);
      // A key or an item of a uniqueItems array: its bytes hashed (not its closing quote, after
      // which the frame is gone), the last one kept for canonical_key_escape.
      Frame key = f;
      if (!string_byte(f, byte, true)) return false;
      if (stack_.back().kind == Kind::kString) {
        Frame& k = stack_.back();
        k.seen = (key.seen ^ byte) * 0x100000001b3;  // FNV-1a
        k.ws = byte;
      }
      return true;
    }
    case Kind::kLiteral: {
      const std::string_view lit = kLiterals[f.a];
      if (byte != static_cast<unsigned char>(lit[static_cast<std::size_t>(f.b)])) return false;
      if (++f.b == static_cast<std::int32_t>(lit.size())) return child_done();
      return true;
    }
    case Kind::kNumber:
    case Kind::kEnum: {
      bool handoff = false;
      const bool ok = f.kind == Kind::kNumber ? number_byte(f, byte, handoff) : enum_byte(f, byte, handoff);
      if (!ok) return false;
      if (!handoff) return true;
      // The value ended before this byte: it belongs to the container (or nothing may follow).
      return child_done() && !done_ && step(byte);
    }
  }
  return false;
}

bool JsonMatcher::start_value(Frame& f, unsigned char byte) {
  const JsonSchemaNode* n = node(f.node);
  if (n && !n->any_of.empty()) {
    // Overlapping anyOf branches: this reading takes the first, a copy each other one; the
    // byte starts the value on each (start_value is the last thing a byte does).
    for (std::size_t i = 1; i < n->any_of.size(); ++i) {
      JsonMatcher copy = *this;
      copy.others_.clear();
      copy.stack_.back().node = n->any_of[i];
      if (copy.start_value(copy.stack_.back(), byte)) {
        copy.forks_ = nullptr;
        forks_->push_back(std::move(copy));
      }
    }
    f.node = n->any_of[0];
    return start_value(f, byte);
  }
  f.ws = 0;
  if (n && !n->enum_values.empty()) {
    f.kind = Kind::kEnum;
    f.a = 0;
    f.b = static_cast<std::int32_t>(n->enum_values.size());
    f.c = 0;
    bool handoff = false;
    return enum_byte(f, byte, handoff) && !handoff;
  }
  const unsigned types = n ? n->types : kJsonAnyType;
  if (byte == '{' && (types & kJsonObject)) {
    if (stack_.size() > kMaxDepth) return false;
    f.kind = Kind::kObject;
    f.phase = kKeyOrEnd;
    f.seen = 0;
    f.b = 0;
    return true;
  }
  if (byte == '[' && (types & kJsonArray)) {
    if (stack_.size() > kMaxDepth) return false;
    f.kind = Kind::kArray;
    f.phase = kItemOrEnd;
    f.c = 0;
    return true;
  }
  if (byte == '"' && (types & kJsonString)) {
    f.kind = Kind::kString;
    f.flags = 0;
    f.phase = 0;
    f.c = 0;
    f.seen = 0;
    f.rx = JsonPattern::start();
    return true;
  }
  if ((byte == '-' || ascii_digit(byte)) && (types & (kJsonInteger | kJsonNumber))) {
    f.kind = Kind::kNumber;
    f.flags = (types & kJsonNumber) && !(n && n->multiple_of > 0) ? 0 : 1;  // 1: an integer (multiples of one too)
    f.a = 0;
    f.b = 0;
    f.c = 0;
    f.seen = 0;
    bool handoff = false;
    return number_byte(f, byte, handoff);
  }
  const int literal = byte == 't' ? 0 : byte == 'f' ? 1 : byte == 'n' ? 2 : -1;
  if (literal >= 0 && (types & (literal == 2 ? kJsonNull : kJsonBool))) {
    if (const std::int32_t depth = unique_item_depth();
        depth >= 0 && given({static_cast<std::uint64_t>(literal), depth, static_cast<std::uint8_t>(Kind::kLiteral)})) {
      return false;  // given already in this uniqueItems array
    }
    f.kind = Kind::kLiteral;
    f.a = literal;
    f.b = 1;
    return true;
  }
  return false;
}

PropertySet JsonMatcher::present(const Frame& object) const {
  PropertySet p;
  for (std::uint64_t b = object.seen; b != 0; b &= b - 1) p.set(static_cast<std::size_t>(std::countr_zero(b)));
  if (const JsonSchemaNode* n = node(object.node); n && n->properties.size() > kSeenBits) {
    const auto depth = static_cast<std::int32_t>(&object - stack_.data());
    for (const Given& g : given_) {
      if (g.depth == depth && g.kind == static_cast<std::uint8_t>(Kind::kObject)) p.set(static_cast<std::size_t>(g.value));
    }
  }
  return p;
}

bool JsonMatcher::key_allowed(const Frame& object, std::int64_t property) const {
  const JsonSchemaNode* n = node(object.node);
  return !n || key_allowed(object, property, present(object));
}

bool JsonMatcher::key_allowed(const Frame& object, std::int64_t property, PropertySet given_now) const {
  const JsonSchemaNode* n = node(object.node);
  if (property >= 0) {
    if (given_now.test(static_cast<std::size_t>(property))) return false;
    if (n->properties[static_cast<std::size_t>(property)].second == kJsonNoNode) return false;  // "name": false
    given_now.set(static_cast<std::size_t>(property));
  } else if (n->additional == kJsonNoNode && n->key_pattern < 0) {
    return false;
  }
  const auto missing = static_cast<std::int64_t>(n->must_give(given_now).without(given_now).count());
  return n->max_properties < 0 || object.b + 1 + missing <= n->max_properties;
}

bool JsonMatcher::can_add_key(const Frame& object) const {
  const JsonSchemaNode* n = node(object.node);
  if (!n) return true;
  const PropertySet given_now = present(object);  // once, not per property
  if (key_allowed(object, -1, given_now)) return true;
  for (std::size_t i = 0; i < n->properties.size(); ++i) {
    if (key_allowed(object, static_cast<std::int64_t>(i), given_now)) return true;
  }
  return false;
}

bool JsonMatcher::can_close(const Frame& object) const {
  const JsonSchemaNode* n = node(object.node);
  if (!n) return true;
  const PropertySet given_now = present(object);
  return n->must_give(given_now).without(given_now).none() && object.b >= n->min_properties;
}

bool JsonMatcher::object_byte(Frame& f, unsigned char byte) {
  switch (f.phase) {
    case kKeyOrEnd:
    case kKeyNext:
      if (byte == '"' && can_add_key(f)) {
        const JsonSchemaNode* n = node(f.node);
        Frame k;
        k.kind = Kind::kString;
        k.flags = static_cast<std::uint8_t>(kKey | (n && !n->properties.empty() ? 0 : kDiverged));
        k.node = f.node;
        k.a = 0;
        k.b = n ? static_cast<std::int32_t>(n->properties.size()) : 0;
        k.c = 0;
        k.seen = 0xcbf29ce484222325;  // FNV-1a's offset basis
        k.rx = JsonPattern::start();
        stack_.push_back(k);
        return true;
      }
      if (byte == '}' && f.phase == kKeyOrEnd && can_close(f)) {
        return close_container();
      }
      return false;
    case kColon: {
      if (byte != ':') return false;
      const JsonSchemaNode* n = node(f.node);
      Frame v;
      v.node = !n                ? kJsonAnyNode
               : f.c >= 0        ? n->properties[static_cast<std::size_t>(f.c)].second
               : f.c == kPatternKey ? n->key_match
                                 : n->additional;
      f.phase = kMember;
      stack_.push_back(v);
      return true;
    }
    case kCommaOrEnd:
      if (byte == ',' && can_add_key(f)) {
        f.phase = kKeyNext;
        return true;
      }
      if (byte == '}' && can_close(f)) {
        return close_container();
      }
      return false;
    default:
      return false;
  }
}

int JsonMatcher::item_node(const Frame& array) const {
  const JsonSchemaNode* n = node(array.node);
  if (!n) return kJsonAnyNode;
  if (n->max_items >= 0 && array.c >= n->max_items) return kJsonNoNode;
  if (array.c < static_cast<std::int64_t>(n->prefix_items.size())) return n->prefix_items[static_cast<std::size_t>(array.c)];
  return n->items;
}

bool JsonMatcher::array_byte(Frame& f, unsigned char byte) {
  const JsonSchemaNode* n = node(f.node);
  const bool enough = !n || f.c >= n->min_items;
  if (byte == ']' && f.phase != kItemNext) {
    if (!enough) return false;
    return close_container();
  }
  if (f.phase == kItemsDone) {
    if (byte != ',' || item_node(f) == kJsonNoNode) return false;
    // uniqueItems over finitely many values: another item only while one is left.
    if (n && n->unique_items && n->unique_domain >= 0 && f.c >= n->unique_domain) return false;
    f.phase = kItemNext;
    return true;
  }
  const int item = item_node(f);
  if (item == kJsonNoNode) return false;
  Frame v;
  v.node = item;
  stack_.push_back(v);
  return step(byte);
}

bool JsonMatcher::string_byte(Frame& f, unsigned char byte, bool one_spelling) {
  const bool key = f.flags & kKey;
  if (const JsonSchemaNode* n = node(f.node); !key && n && n->format != JsonFormat::kNone) {
    // A formatted string (json_format.h): ASCII characters only, no escapes, in `seen`.
    if (byte == '"') {
      if (n->pattern >= 0 && !schema_->patterns[static_cast<std::size_t>(n->pattern)].accepts(f.rx)) return false;
      return format_complete(n->format, f.seen) && close_string(f);
    }
    if (!format_step(n->format, f.seen, byte)) return false;
    if (n->max_length >= 0 && f.c >= n->max_length) return false;
    if (!pattern_char(f, byte, f.c + 1)) return false;
    ++f.c;
    return true;
  }
  const JsonSchemaNode* const pn = key ? nullptr : node(f.node);
  const bool patterned = pn && pn->pattern >= 0;
  // A key of an object with a key pattern (patternProperties, propertyNames) follows it too,
  // its characters gathered in f.cp (f.a narrows the listed names); [part_lo, part_hi]: the
  // characters a UTF-8 character's bytes so far can begin.
  const JsonSchemaNode* const on = key ? node(f.node) : nullptr;
  const JsonPattern* const key_pattern = on && on->key_pattern >= 0 ? &schema_->patterns[static_cast<std::size_t>(on->key_pattern)] : nullptr;
  std::int32_t& gather = key ? f.cp : f.a;
  char32_t part_lo = 0, part_hi = 0;
  // A patterned string's character, once its last byte is in (escapes decoded; f.a gathers a
  // UTF-8 character's bits).
  char32_t complete = 0xFFFFFFFF;
  const std::uint8_t esc = f.flags & kEscape;
  const int pending = (f.flags & kPending) >> 3;
  const auto set_pending = [&f](int v) { f.flags = static_cast<std::uint8_t>((f.flags & ~kPending) | (v << 3)); };
  const auto set_escape = [&f](int v) { f.flags = static_cast<std::uint8_t>((f.flags & ~kEscape) | v); };
  bool new_char = false;
  bool escape_begun = false;
  if (f.phase > 0) {  // UTF-8 continuation bytes
    const unsigned lo = pending == kFirstA0 ? 0xA0 : pending == kFirst90 ? 0x90 : 0x80;
    const unsigned hi = pending == kFirst80To9F ? 0x9F : pending == kFirst80To8F ? 0x8F : 0xBF;
    if (byte < lo || byte > hi) return false;
    set_pending(0);
    --f.phase;
    if (patterned || key_pattern) {
      gather = static_cast<std::int32_t>((static_cast<std::uint32_t>(gather) << 6) | (byte & 0x3F));
      part_lo = static_cast<char32_t>(gather) << (6 * f.phase);
      part_hi = ((static_cast<char32_t>(gather) + 1) << (6 * f.phase)) - 1;
      if (f.phase == 0) {
        complete = static_cast<char32_t>(gather);
      } else if (patterned && !pattern_may(f, part_lo, part_hi, f.c)) {
        return false;  // no character these bytes begin can be taken
      }
    }
  } else if (pending >= kLowBackslash) {  // the second half of a surrogate pair: \u dc00-dfff
    const bool ok = pending == kLowBackslash ? byte == '\\'
                    : pending == kLowU       ? byte == 'u'
                    : pending == kLowD       ? (byte == 'd' || byte == 'D')
                                             : (byte >= 'c' && byte <= 'f') || (byte >= 'C' && byte <= 'F');
    if (!ok) return false;
    set_pending(pending == kLowC ? 0 : pending + 1);
    if (pending == kLowC) set_escape(4);  // its last two digits
  } else if (esc == 1) {
    if (one_spelling && byte == '/') return false;  // "\/" is "/": keys are written one way (canonical_key_escape)
    if (byte == 'u') {
      if (patterned) return false;
      if (key_pattern) f.rx = JsonPattern::State{};  // a key with a \u escape matches no key pattern
      set_escape(2);
    } else if (byte == '"' || byte == '\\' || byte == '/' || byte == 'b' || byte == 'f' || byte == 'n' || byte == 'r' ||
               byte == 't') {
      set_escape(0);
      complete = byte == 'b' ? 0x08 : byte == 'f' ? 0x0C : byte == 'n' ? 0x0A : byte == 'r' ? 0x0D : byte == 't' ? 0x09 : byte;
    } else {
      return false;
    }
  } else if (esc >= 2) {
    if (!ascii_hex(byte)) return false;
    if (one_spelling && !canonical_key_escape(esc, byte, f.ws)) return false;
    if (esc == 2) {
      set_pending(byte == 'd' || byte == 'D' ? kMaybeSurrogate : 0);
    } else if (esc == 3 && pending == kMaybeSurrogate) {
      const bool high = (byte >= '8' && byte <= '9') || (byte >= 'a' && byte <= 'b') || (byte >= 'A' && byte <= 'B');
      if (!high && !ascii_digit(byte)) return false;  // d[c-f]xx: a lone low surrogate
      set_pending(high ? kHigh : 0);
    } else if (esc == 5 && pending == kHigh) {
      set_pending(kLowBackslash);
    }
    set_escape(esc == 5 ? 0 : esc + 1);
  } else if (byte == '"') {
    if (patterned && !schema_->patterns[static_cast<std::size_t>(pn->pattern)].accepts(f.rx)) return false;
    return key ? close_key(f) : close_string(f);
  } else if (byte == '\\') {
    if (patterned) {
      bool some = false;
      for (char32_t c : {U'"', U'\\', U'/', U'\b', U'\f', U'\n', U'\r', U'\t'}) some = some || pattern_may(f, c, c, f.c + 1);
      if (!some) return false;
    }
    f.flags = static_cast<std::uint8_t>((f.flags & ~kEscape) | 1);
    new_char = true;
    escape_begun = true;
  } else if (byte < 0x20) {
    return false;
  } else if (byte < 0x80) {
    new_char = true;
    complete = byte;
  } else if (byte >= 0xC2 && byte <= 0xDF) {
    part_lo = (byte & 0x1Fu) << 6, part_hi = ((byte & 0x1Fu) << 6) | 0x3F;
    if (patterned && !pattern_may(f, part_lo, part_hi, f.c + 1)) return false;
    f.phase = 1, new_char = true;
    gather = byte & 0x1F;
  } else if (byte >= 0xE0 && byte <= 0xEF) {
    // The characters it can begin: no overlong forms (E0: from U+0800), no surrogates (ED).
    const char32_t lo = byte == 0xE0 ? 0x800 : (byte & 0x0Fu) << 12;
    const char32_t hi = byte == 0xED ? 0xD7FF : ((byte & 0x0Fu) << 12) | 0xFFF;
    if (patterned && !pattern_may(f, lo, hi, f.c + 1)) return false;
    part_lo = lo, part_hi = hi;
    f.phase = 2, new_char = true;
    gather = byte & 0x0F;
    set_pending(byte == 0xE0 ? kFirstA0 : byte == 0xED ? kFirst80To9F : 0);
  } else if (byte >= 0xF0 && byte <= 0xF4) {
    const char32_t lo = byte == 0xF0 ? 0x10000 : (byte & 0x07u) << 18;
    const char32_t hi = std::min<char32_t>(((byte & 0x07u) << 18) | 0x3FFFF, 0x10FFFF);
    if (patterned && !pattern_may(f, lo, hi, f.c + 1)) return false;
    part_lo = lo, part_hi = hi;
    f.phase = 3, new_char = true;
    gather = byte & 0x07;
    set_pending(byte == 0xF0 ? kFirst90 : byte == 0xF4 ? kFirst80To8F : 0);
  } else {
    return false;
  }
  if (key) {
    bool other_only = (f.flags & kDiverged) != 0;  // the key can no longer be a listed property
    // Narrow the listed properties to those spelled with these bytes so far.
    if (!(f.flags & kDiverged)) {
      const auto& props = node(f.node)->properties;
      const auto pos = static_cast<std::size_t>(f.c);
      const auto first = props.begin() + f.a, last = props.begin() + f.b;
      const auto lo = std::partition_point(first, last, [&](const auto& p) {
        return p.first.size() <= pos || static_cast<unsigned char>(p.first[pos]) < byte;
      });
      const auto hi = std::partition_point(lo, last, [&](const auto& p) { return static_cast<unsigned char>(p.first[pos]) == byte; });
      // A prefix only of properties the object cannot take (given already, or leaving no room for
      // the required ones) goes on only as another key, where one is allowed; it is still
      // narrowed, so that it does not end as one of them (a key given twice).
      const Frame& object = stack_[stack_.size() - 2];
      const PropertySet given_now = present(object);
      const bool open = std::any_of(lo, hi, [&](const auto& p) { return key_allowed(object, &p - props.data(), given_now); });
      if ((lo == hi || !open) && !key_allowed(object, -1, given_now)) return false;
      if (lo == hi) {
        f.flags |= kDiverged;
      } else {
        f.a = static_cast<std::int32_t>(lo - props.begin());
        f.b = static_cast<std::int32_t>(hi - props.begin());
      }
      other_only = lo == hi || !open;
    }
    ++f.c;
    if (key_pattern) {
      // The pattern follows every key; where other keys must match it (additionalProperties
      // false), a key that can only be another key goes on only while a match can follow.
      if (complete != 0xFFFFFFFF && !key_pattern->step(f.rx, complete)) f.rx = JsonPattern::State{};
      bool live = f.rx != JsonPattern::State{} && (f.phase == 0 || key_pattern->may_step(f.rx, part_lo, part_hi, INT64_MAX, 0));
      if (live && escape_begun) {  // the characters a key's escape can stand for ("\/" is not written in keys)
        live = false;
        for (char32_t c : {U'"', U'\\', U'\b', U'\f', U'\n', U'\r', U'\t'}) live = live || key_pattern->may_step(f.rx, c, c, INT64_MAX, 0);
      }
      if (other_only && !live && on->additional == kJsonNoNode) return false;
    }
  } else if (new_char) {
    const JsonSchemaNode* n = node(f.node);
    if (n && n->max_length >= 0 && f.c >= n->max_length) return false;
    ++f.c;
  }
  if (patterned && complete != 0xFFFFFFFF && !pattern_char(f, complete, f.c)) return false;
  return true;
}

// `chars`: the string's length with the character the bytes begin.
bool JsonMatcher::pattern_may(const Frame& f, char32_t lo, char32_t hi, std::int64_t chars) const {
  const JsonSchemaNode* n = node(f.node);
  const std::int64_t at_most = n->max_length >= 0 ? n->max_length - chars : INT64_MAX;
  return schema_->patterns[static_cast<std::size_t>(n->pattern)].may_step(f.rx, lo, hi, at_most, n->min_length - chars);
}

// `chars`: the string's length with c. Refused too when no match fits minLength / maxLength.
bool JsonMatcher::pattern_char(Frame& f, char32_t c, std::int64_t chars) const {
  const JsonSchemaNode* n = node(f.node);
  if (!n || n->pattern < 0) return true;
  const JsonPattern& p = schema_->patterns[static_cast<std::size_t>(n->pattern)];
  if (!p.step(f.rx, c)) return false;
  return p.can_match(f.rx, n->min_length - chars, n->max_length >= 0 ? n->max_length - chars : INT64_MAX);
}

bool JsonMatcher::close_key(const Frame& f) {
  // A listed property not given yet, or another key where others are allowed.
  const JsonSchemaNode* n = node(f.node);
  std::int64_t property = -1;
  if (!(f.flags & kDiverged) && f.a < f.b &&
      n->properties[static_cast<std::size_t>(f.a)].first.size() == static_cast<std::size_t>(f.c)) {
    property = f.a;
  }
  Frame& object = stack_[stack_.size() - 2];
  if (!key_allowed(object, property)) return false;
  // Another key: not one this object has already (a listed one is known by `seen`). Known by
  // the hash of its text: two keys that collide would only make the second one refused.
  if (property < 0) {
    // Another key: its schema is the key pattern's where that matches it, else additionalProperties'.
    if (n && n->key_pattern >= 0 && schema_->patterns[static_cast<std::size_t>(n->key_pattern)].accepts(f.rx)) {
      property = kPatternKey;
    } else if (n && n->additional == kJsonNoNode) {
      return false;
    }
    const auto depth = static_cast<std::int32_t>(stack_.size() - 2);
    const Given key = {f.seen, depth, static_cast<std::uint8_t>(Kind::kValue)};
    if (given(key)) return false;
    given_.push_back(key);
  }
  object.c = property;
  ++object.b;  // members given
  if (property >= 0 && property < static_cast<std::int64_t>(kSeenBits)) {
    object.seen |= std::uint64_t{1} << property;
  } else if (property >= 0) {  // past the frame's bits: in given_, by index
    given_.push_back({static_cast<std::uint64_t>(property), static_cast<std::int32_t>(stack_.size() - 2),
                      static_cast<std::uint8_t>(Kind::kObject)});
  }
  object.phase = kColon;
  stack_.pop_back();
  return true;
}

bool JsonMatcher::close_container() {
  // What it holds is last in given_ (what containers inside it held is gone).
  const auto depth = static_cast<std::int32_t>(stack_.size() - 1);
  while (!given_.empty() && given_.back().depth == depth) given_.pop_back();
  return child_done();
}

bool JsonMatcher::close_string(const Frame& f) {
  const JsonSchemaNode* n = node(f.node);
  if (n && f.c < n->min_length) return false;
  return child_done();
}

namespace {

// 10^(6 - places) in 10^-6 units: the weight of decimal number `places` (from 1), and the span
// of the values that continue a text with `places` decimals.
std::int64_t decimal_step(int places) {
  static constexpr std::int64_t kSteps[] = {1000000, 100000, 10000, 1000, 100, 10, 1};
  static_assert(JsonSchemaNode::kDecimalPlaces == 6, "kSteps");
  return kSteps[places];
}

// A bounded number (JsonSchemaNode::decimal) in units of 10^-6. Whether one in
// [n.min_scaled, n.max_scaled] is written with this prefix: the sign, then number state `state`
// with `seen` (states 2, 3: the integer digits' value, `digits` of them; 4, 5: the value so far
// in units, `places` decimals written).
bool decimal_prefix_fits(bool negative, std::int32_t state, std::uint64_t seen, int digits, int places,
                         const JsonSchemaNode& n) {
  constexpr __int128 kUnit = JsonSchemaNode::kDecimalUnit;
  const auto hits = [&](__int128 a, __int128 b) {
    if (negative) std::swap(a, b), a = -a, b = -b;
    return b >= n.min_scaled && a <= n.max_scaled;
  };
  const __int128 v = seen;
  switch (state) {
    case 2: return hits(0, kUnit - 1);  // 0 or 0.ddd
    case 3: {  // more integer digits may follow, then decimals
      __int128 p = 1;
      for (int m = 0; digits + m <= JsonSchemaNode::kDecimalIntegerDigits; ++m, p *= 10) {
        if (hits(v * p * kUnit, (v + 1) * p * kUnit - 1)) return true;
      }
      return false;
    }
    case 4:
    case 5: return hits(v, v + decimal_step(places) - 1);
    default: return hits(0, JsonSchemaNode::kDecimalMax);  // a sign alone
  }
}

bool integer_in_range(bool negative, std::uint64_t m, const JsonSchemaNode& n) {
  const __int128 v = negative ? -static_cast<__int128>(m) : static_cast<__int128>(m);
  return v >= n.minimum && v <= n.maximum && (n.multiple_of <= 0 || v % n.multiple_of == 0);
}

// a / q rounded up and down (q > 0; C++ division rounds toward zero).
__int128 ceil_div(__int128 a, __int128 q) { return a >= 0 ? (a + q - 1) / q : a / q; }
__int128 floor_div(__int128 a, __int128 q) { return a >= 0 ? a / q : -((-a + q - 1) / q); }

}  // namespace

bool JsonMatcher::number_in_range(const Frame& f) const {
  const JsonSchemaNode* n = node(f.node);
  if (!n || (!n->bounded && n->multiple_of <= 0)) return true;
  if (!n->decimal || (f.flags & 1)) return integer_in_range(f.flags & 2, f.seen, *n);
  const __int128 m = static_cast<__int128>(f.seen) * (f.a == 5 ? 1 : JsonSchemaNode::kDecimalUnit);
  const __int128 v = f.flags & 2 ? -m : m;
  return v >= n->min_scaled && v <= n->max_scaled;
}

bool JsonMatcher::number_byte(Frame& f, unsigned char byte, bool& handoff) {
  const bool integer = f.flags & 1;
  const bool digit = ascii_digit(byte);
  std::int32_t next = -1;
  switch (f.a) {
    case 0: next = byte == '-' ? 1 : byte == '0' ? 2 : digit ? 3 : -1; break;
    case 1: next = byte == '0' ? 2 : digit ? 3 : -1; break;
    case 2: next = byte == '.' ? 4 : (byte == 'e' || byte == 'E') ? 6 : -1; break;
    case 3: next = digit ? 3 : byte == '.' ? 4 : (byte == 'e' || byte == 'E') ? 6 : -1; break;
    case 4: next = digit ? 5 : -1; break;
    case 5: next = digit ? 5 : (byte == 'e' || byte == 'E') ? 6 : -1; break;
    case 6: next = (byte == '+' || byte == '-') ? 7 : digit ? 8 : -1; break;
    case 7: next = digit ? 8 : -1; break;
    case 8: next = digit ? 8 : -1; break;
    default: break;
  }
  if (integer && next >= 4) next = -1;
  if (next < 0) {
    if (!accepting(f.a) || !number_in_range(f)) return false;
    handoff = true;
    return true;
  }
  // After '-', '.', 'e' or the exponent's sign a digit must still fit: no dead end at the limit.
  const bool needs_digit = next == 1 || next == 4 || next == 6 || next == 7;
  if (f.b + (needs_digit ? 1 : 0) >= kMaxNumberBytes) return false;
  // An integer fits int64 (what a reader parses it into): at most 18 digits.
  if (integer && f.b >= kMaxIntegerDigits + (f.flags & 2 ? 1 : 0)) return false;
  if (f.a == 0 && byte == '-') f.flags |= 2;
  if (const JsonSchemaNode* n = node(f.node); n && n->bounded && n->decimal && !integer) {
    // A bounded number: no exponent, the value so far (integer digits in `seen`, then after the
    // point in units of 10^-6, decimals counted in `c`) must still lead to one in range.
    const bool negative = f.flags & 2;
    std::uint64_t v = f.seen;
    if (next >= 6) return false;
    if (next == 2 || next == 3) {
      if (f.b + 1 - (negative ? 1 : 0) > JsonSchemaNode::kDecimalIntegerDigits) return false;
      v = v * 10 + (byte - '0');
    } else if (next == 4) {
      v *= JsonSchemaNode::kDecimalUnit;
      f.c = 0;
    } else if (next == 5) {
      if (f.c >= JsonSchemaNode::kDecimalPlaces) return false;
      ++f.c;
      v += static_cast<std::uint64_t>(decimal_step(static_cast<int>(f.c))) * (byte - '0');
    }
    const int digits = f.b + 1 - (negative ? 1 : 0);
    if (!decimal_prefix_fits(negative, next, v, digits, static_cast<int>(f.c), *n)) return false;
    f.seen = v;
  } else if (integer) {
    // The integer so far (its magnitude in `seen`) must still lead to one in range, and in a
    // uniqueItems array to one not given yet.
    const bool negative = f.flags & 2;
    const int digits = f.b + 1 - (negative ? 1 : 0);  // after this byte
    const std::uint64_t m = digit ? f.seen * 10 + (byte - '0') : f.seen;
    const JsonSchemaNode* n = node(f.node);
    const std::int32_t depth = unique_item_depth();
    if (((n && (n->bounded || n->multiple_of > 0)) || depth >= 0) && !integer_left(negative, m, digits, n, depth)) return false;
    f.seen = m;
  }
  // An exponent of at most two digits keeps every number a finite double (readers refuse 1e400).
  if (next == 8 && ++f.c > kMaxExponentDigits) return false;
  f.a = next;
  ++f.b;
  return true;
}

bool JsonMatcher::integer_left(bool negative, std::uint64_t m, int digits, const JsonSchemaNode* n, std::int32_t depth) const {
  constexpr __int128 kLimit = 999999999999999999;  // kMaxIntegerDigits nines
  const __int128 lo = n && n->bounded ? std::max<__int128>(n->minimum, -kLimit) : -kLimit;
  const __int128 hi = n && n->bounded ? std::min<__int128>(n->maximum, kLimit) : kLimit;
  const __int128 q = n && n->multiple_of > 0 ? n->multiple_of : 1;
  // Whether [a, b] within the bounds holds more multiples of q than were given from it.
  const auto room = [&](__int128 a, __int128 b) {
    a = std::max(a, lo), b = std::min(b, hi);
    if (a > b) return false;
    const __int128 count = floor_div(b, q) - ceil_div(a, q) + 1;
    if (count <= 0) return false;
    if (depth < 0 || count > static_cast<__int128>(given_.size())) return true;  // more than were ever given
    __int128 taken = 0;
    for (const Given& g : given_) {
      const auto v = static_cast<__int128>(static_cast<std::int64_t>(g.value));
      taken += g.depth == depth && g.kind == static_cast<std::uint8_t>(Kind::kNumber) && v >= a && v <= b;
    }
    return count > taken;
  };
  if (digits <= 0) return room(-kLimit, 0);  // "-": any integer <= 0
  if (m == 0) return room(0, 0);             // a lone 0 (or -0) takes no more digits
  __int128 p = 1;
  for (int k = 0; digits + k <= kMaxIntegerDigits; ++k, p *= 10) {
    const __int128 a = static_cast<__int128>(m) * p, b = a + p - 1;
    if (negative ? room(-b, -a) : room(a, b)) return true;
  }
  return false;
}

bool JsonMatcher::enum_byte(Frame& f, unsigned char byte, bool& handoff) {
  const auto& values = node(f.node)->enum_values;
  const auto pos = static_cast<std::size_t>(f.c);
  const auto first = values.begin() + f.a, last = values.begin() + f.b;
  const auto lo = std::partition_point(first, last, [&](const std::string& v) {
    return v.size() <= pos || static_cast<unsigned char>(v[pos]) < byte;
  });
  const auto hi = std::partition_point(lo, last, [&](const std::string& v) { return static_cast<unsigned char>(v[pos]) == byte; });
  if (lo != hi) {
    const auto a = static_cast<std::int32_t>(lo - values.begin()), b = static_cast<std::int32_t>(hi - values.begin());
    if (const std::int32_t depth = unique_item_depth(); depth >= 0 && static_cast<std::size_t>(b - a) <= given_.size()) {
      // In a uniqueItems array: some value these bytes begin is not given yet.
      std::int32_t taken = 0;
      for (const Given& g : given_) {
        taken += g.depth == depth && g.kind == static_cast<std::uint8_t>(Kind::kEnum) && static_cast<std::int32_t>(g.value) >= a &&
                 static_cast<std::int32_t>(g.value) < b;
      }
      if (taken == b - a) return false;
    }
    f.a = a;
    f.b = b;
    ++f.c;
    return true;
  }
  if (first->size() != pos) return false;  // no value ends here
  handoff = true;
  return true;
}

}  // namespace staticlm
