// JSON Schema "format" values the constrained decoder enforces on strings: "date" (YYYY-MM-DD,
// a real calendar day, year 0001-9999), "time" (hh:mm:ss, up to 6 decimals of a second, then
// "Z" or an offset +hh:mm / -hh:mm), "date-time" (date "T" time: RFC 3339), "uuid" (8-4-4-4-12
// hex digits). What they generate is what strict readers (RFC 3339, Python's datetime,
// pydantic) take. "email", "hostname", "ipv4", "ipv6", "uri" and "duration" are enforced as
// patterns instead (format_pattern). Other format names stay annotations (JsonFormat::kNone).
#pragma once

#include <cstdint>
#include <string_view>

namespace staticlm {

enum class JsonFormat : std::uint8_t { kNone, kDate, kTime, kDateTime, kUuid };

// ASCII classes of JSON's grammar (digits of numbers, hex digits of \u escapes and uuids).
inline bool ascii_digit(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool ascii_hex(unsigned char c) { return ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

JsonFormat json_format(std::string_view name);

// The formats enforced through a pattern (json_pattern.h): the anchored ECMA-262 expression a
// generated value matches, and the most characters the format allows (-1: no limit). Where
// the full grammar does not fit a position automaton, the expression is a part of it, so every
// value generated is valid, but not every valid value can be generated (see the .cc). A null
// `expression` for other names.
struct FormatPattern {
  const char* expression;
  std::int64_t most;
};
FormatPattern format_pattern(std::string_view name);

// The fewest and the most characters a value of `format` has (date 10, time 9-21, date-time
// 20-32, uuid 36; kNone: 0 and -1, no limit).
struct FormatLengths {
  std::int64_t fewest, most;
};
FormatLengths format_lengths(JsonFormat format);

// The text so far of a formatted string, packed (0: nothing yet). format_step takes one more
// byte of the string's content and says whether a valid text still starts so; format_complete
// whether the text so far is a whole value.
bool format_step(JsonFormat format, std::uint64_t& state, unsigned char byte);
bool format_complete(JsonFormat format, std::uint64_t state);

}  // namespace staticlm
