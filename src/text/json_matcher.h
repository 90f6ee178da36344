// Byte-by-byte matcher of one JSON value against a compiled JsonSchema: feed() says whether a
// byte can continue a text that is still the prefix of a valid value. Copying a matcher is cheap
// (a vector of small frames), so a caller can try a token's bytes on a copy.
//
// Limits that keep a generation from running forever inside one value: whitespace between
// tokens is nothing, one space, or a newline and at most kMaxIndent spaces or tabs (llama.cpp's
// JSON grammar), numbers of at most kMaxNumberBytes bytes (integers of kMaxIntegerDigits
// digits, so they fit int64; exponents of kMaxExponentDigits, so every number is a finite double), at most
// kMaxDepth nested arrays and objects. Strings must be valid UTF-8 (escapes are checked, not
// decoded: minLength / maxLength count an escape as one character). Duplicate keys are refused
// (keys are written in one spelling: \u escapes only for control characters, no "\/"), and so
// are items a uniqueItems array holds already (those strings are written so too); a prefix
// whose every ending is given already is refused at its first byte that says so.
// An anyOf whose branches overlap is followed on every branch the bytes so far fit (a value is
// taken when one of them takes it).
// A string with a `pattern` is matched character by character (its escapes decoded); it takes
// no \u escapes (raw UTF-8 writes any character a \u could, but the control characters).
#pragma once

#include <cstdint>
#include <vector>

#include "text/json_schema.h"

namespace staticlm {

class JsonMatcher {
 public:
  static constexpr int kMaxIndent = 20;
  static constexpr int kMaxNumberBytes = 24;
  static constexpr int kMaxIntegerDigits = 18;
  static constexpr int kMaxExponentDigits = 2;
  static constexpr int kMaxDepth = 64;
  // Readings followed at once (anyOf branches that fit the bytes so far); more are dropped.
  static constexpr std::size_t kMaxReadings = 64;

  // `schema` must outlive the matcher (and its copies).
  explicit JsonMatcher(const JsonSchema& schema);

  // Takes one more byte; false (and the matcher unchanged in meaning: do not feed it further)
  // when no valid value starts with the bytes so far and this one.
  bool feed(unsigned char byte);
  // The bytes so far are a whole valid value (nothing more is needed; a number could go on).
  bool complete() const;
  // No byte can follow.
  bool finished() const;
  // Inside a string value, between characters: how many more plain characters (no '"', '\\' or
  // control characters) it may hold (INT64_MAX: any); inside a key where any other key may
  // stand, INT64_MAX; -1 elsewhere (other keys, an escape, the middle of a character, outside a
  // string).
  std::int64_t string_room() const;

 private:
  enum class Kind : std::uint8_t { kValue, kObject, kArray, kString, kNumber, kLiteral, kEnum };
  struct Frame {
    Kind kind = Kind::kValue;
    std::uint8_t phase = 0;
    std::uint8_t ws = 0;       // whitespace bytes in a row (a key, a uniqueItems string: its last byte)
    std::uint8_t flags = 0;    // per kind (string: key, escape / \u digits / UTF-8 bytes to come)
    std::int32_t node = kJsonAnyNode;
    std::int32_t a = 0, b = 0;  // per kind: enum / key range, counts
    std::int64_t c = 0;         // per kind: string length, array items, key's property
    std::uint64_t seen = 0;     // object: properties given; key, uniqueItems string: its text's hash
    JsonPattern::State rx{};    // string with a pattern, key of an object with a key pattern: the automaton's state
    std::int32_t cp = 0;        // key of an object with a key pattern: a UTF-8 character's bits so far
  };

  // What the objects and uniqueItems arrays open hold so far (given_): each key (but listed
  // properties, which are `seen` bits) by the hash of its text, each item by its value's
  // identity (see child_done), with the depth of its object or array and a kind (kValue for
  // keys, else the item frame's kind); listed properties past the 64 `seen` bits by index, with
  // kind kObject.
  struct Given {
    std::uint64_t value;
    std::int32_t depth;
    std::uint8_t kind;
  };

  const JsonSchemaNode* node(int index) const;
  bool start_value(Frame& f, unsigned char byte);
  bool step(unsigned char byte);
  bool whitespace(Frame& f, unsigned char byte);
  // Pops the value on top, done; false when it is an item its uniqueItems array holds already.
  bool child_done();
  bool given(const Given& g) const;
  // The depth of the uniqueItems array whose item is on top of the stack; -1: none.
  std::int32_t unique_item_depth() const;
  // Whether an integer written with this prefix (the sign, then `digits` digits of value m; a
  // lone 0 takes no more) is within `n`'s bounds, a multiple of its multipleOf, and not given
  // yet in the uniqueItems array at `depth` (-1: none).
  bool integer_left(bool negative, std::uint64_t m, int digits, const JsonSchemaNode* n, std::int32_t depth) const;
  bool object_byte(Frame& f, unsigned char byte);
  bool array_byte(Frame& f, unsigned char byte);
  // one_spelling: a key or a uniqueItems item, compared by its text (canonical_key_escape).
  bool string_byte(Frame& f, unsigned char byte, bool one_spelling);
  bool close_key(const Frame& f);
  bool close_container();
  bool close_string(const Frame& f);
  bool pattern_char(Frame& f, char32_t c, std::int64_t chars) const;
  bool pattern_may(const Frame& f, char32_t lo, char32_t hi, std::int64_t chars) const;
  bool number_byte(Frame& f, unsigned char byte, bool& handoff);
  bool number_in_range(const Frame& f) const;
  bool enum_byte(Frame& f, unsigned char byte, bool& handoff);
  bool can_close(const Frame& object) const;
  bool can_add_key(const Frame& object) const;
  // Whether `object` may take listed property `property` (-1: a key not listed) next: not given
  // yet, and leaving maxProperties room for the required properties still missing.
  bool key_allowed(const Frame& object, std::int64_t property) const;
  // The same with present(object) computed by the caller (`object` has a schema node).
  bool key_allowed(const Frame& object, std::int64_t property, PropertySet given_now) const;
  // The listed properties `object` (a frame on the stack) has given: the first kSeenBits in its
  // `seen` bits, the rest in given_ (kind kObject, by index).
  PropertySet present(const Frame& object) const;
  static constexpr std::size_t kSeenBits = 64;
  int item_node(const Frame& array) const;

  bool feed_path(unsigned char byte, std::vector<JsonMatcher>& forks);
  bool path_complete() const;
  std::int64_t path_string_room() const;

  const JsonSchema* schema_;
  std::vector<Frame> stack_;
  std::vector<Given> given_;
  bool done_ = false;
  // The other readings of the bytes so far, where an anyOf's overlapping branches all fit them
  // (each with no readings of its own); this one is the first.
  std::vector<JsonMatcher> others_;
  std::vector<JsonMatcher>* forks_ = nullptr;  // while feeding: where start_value puts new readings
};

}  // namespace staticlm
