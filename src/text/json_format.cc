#include "text/json_format.h"

#include <cstring>

namespace staticlm {

namespace {

// Where a formatted text is. The fixed parts are walked by `pos` in a template; a time's
// decimals and offset are phases after it.
struct State {
  std::uint8_t pos = 0;     // characters of the current template taken
  std::uint8_t phase = 0;   // see below
  std::uint8_t digits = 0;  // decimals of the second taken
  std::uint8_t last = 0;    // the digit before this one (two-digit fields)
  std::uint16_t year = 0;
  std::uint8_t month = 0;
  std::uint8_t unused = 0;
};
static_assert(sizeof(State) == 8, "packed into 64 bits");

// Phases: the date template, the time template, after the seconds (".", "Z", "+", "-"), the
// decimals, the offset template, done; a uuid is its own template.
enum : std::uint8_t { kDatePart, kTimePart, kAfterSeconds, kDecimals, kOffset, kDone, kUuidPart };

constexpr std::string_view kDateTemplate = "YYYY-MM-DD";
constexpr std::string_view kTimeTemplate = "hh:mm:ss";
constexpr std::string_view kOffsetTemplate = "hh:mm";
constexpr std::string_view kUuidTemplate = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";

int days_in(int month, int year) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
  return month == 2 && leap ? 29 : days[month - 1];
}

// The fixed-width date fields, digit by digit: a prefix is taken only if some whole date has it.
bool date_char(State& s, unsigned char c) {
  const char slot = kDateTemplate[s.pos];
  if (slot == '-') return c == '-';
  if (!ascii_digit(c)) return false;
  const int d = c - '0';
  if (slot == 'Y') {
    s.year = static_cast<std::uint16_t>(s.year * 10 + d);
    return s.pos < 3 || s.year > 0;  // year 0000 does not exist for Python's datetime
  }
  if (slot == 'M') {
    if (s.pos == 5) return d <= 1 && (s.last = static_cast<std::uint8_t>(d), true);
    const int m = s.last * 10 + d;
    if (m < 1 || m > 12) return false;
    s.month = static_cast<std::uint8_t>(m);
    return true;
  }
  const int max = days_in(s.month, s.year);
  if (s.pos == 8) return d <= max / 10 && (s.last = static_cast<std::uint8_t>(d), true);
  const int day = s.last * 10 + d;
  return day >= 1 && day <= max;
}

// hh:mm(:ss) fields: hours 00-23, minutes and seconds 00-59.
bool clock_char(State& s, std::string_view tmpl, unsigned char c) {
  const char slot = tmpl[s.pos];
  if (slot == ':') return c == ':';
  if (!ascii_digit(c)) return false;
  const int d = c - '0';
  const bool first = s.pos == 0 || tmpl[s.pos - 1] == ':';
  if (first) {
    s.last = static_cast<std::uint8_t>(d);
    return slot == 'h' ? d <= 2 : d <= 5;
  }
  return slot != 'h' || s.last * 10 + d <= 23;
}

}  // namespace

JsonFormat json_format(std::string_view name) {
  if (name == "date") return JsonFormat::kDate;
  if (name == "time") return JsonFormat::kTime;
  if (name == "date-time") return JsonFormat::kDateTime;
  if (name == "uuid") return JsonFormat::kUuid;
  return JsonFormat::kNone;
}

FormatLengths format_lengths(JsonFormat format) {
  switch (format) {
    case JsonFormat::kDate: return {10, 10};          // YYYY-MM-DD
    case JsonFormat::kTime: return {9, 21};           // hh:mm:ssZ .. hh:mm:ss.ffffff+hh:mm
    case JsonFormat::kDateTime: return {20, 32};      // date, T, time
    case JsonFormat::kUuid: return {36, 36};          // 8-4-4-4-12
    case JsonFormat::kNone: break;
  }
  return {0, -1};
}

bool format_step(JsonFormat format, std::uint64_t& packed, unsigned char c) {
  State s;
  std::memcpy(static_cast<void*>(&s), &packed, sizeof s);
  if (packed == 0) {
    s.phase = format == JsonFormat::kUuid ? kUuidPart : format == JsonFormat::kTime ? kTimePart : kDatePart;
    s.pos = 0;
  }
  bool ok = false;
  switch (s.phase) {
    case kUuidPart:
      ok = s.pos < kUuidTemplate.size() && (kUuidTemplate[s.pos] == '-' ? c == '-' : ascii_hex(c));
      if (ok && ++s.pos == kUuidTemplate.size()) s.phase = kDone;
      break;
    case kDatePart:
      if (s.pos == kDateTemplate.size()) {  // date-time: the 'T' between date and time
        ok = c == 'T';
        if (ok) s.phase = kTimePart, s.pos = 0;
        break;
      }
      ok = date_char(s, c);
      if (ok && ++s.pos == kDateTemplate.size() && format == JsonFormat::kDate) s.phase = kDone;
      break;
    case kTimePart:
      ok = clock_char(s, kTimeTemplate, c);
      if (ok && ++s.pos == kTimeTemplate.size()) s.phase = kAfterSeconds;
      break;
    case kAfterSeconds:
    case kDecimals:
      if (c == '.' && s.phase == kAfterSeconds) {
        ok = true;
        s.phase = kDecimals, s.digits = 0;
      } else if (ascii_digit(c) && s.phase == kDecimals) {
        ok = s.digits < 6;
        ++s.digits;
      } else if ((c == 'Z' || c == '+' || c == '-') && (s.phase == kAfterSeconds || s.digits > 0)) {
        ok = true;
        s.phase = c == 'Z' ? kDone : kOffset, s.pos = 0;
      }
      break;
    case kOffset:
      ok = clock_char(s, kOffsetTemplate, c);
      if (ok && ++s.pos == kOffsetTemplate.size()) s.phase = kDone;
      break;
    default:
      break;
  }
  if (!ok) return false;
  std::memcpy(&packed, &s, sizeof s);  // never 0 again: a field moved
  return true;
}

bool format_complete(JsonFormat format, std::uint64_t packed) {
  if (format == JsonFormat::kNone) return true;
  State s;
  std::memcpy(static_cast<void*>(&s), &packed, sizeof s);
  return packed != 0 && s.phase == kDone;
}

// The expressions of format_pattern. Each is checked against an independent reader in
// tests/unit/text/json_format_pattern_test.cc (glibc's inet_pton for the addresses) and
// against jsonschema's format checker in the reference corpus (tools/json_schema_reference.py).
namespace {

#define STATICLM_OCTET "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
#define STATICLM_HEX16 "[0-9A-Fa-f]{1,4}"
// A DNS label (RFC 1123): letters, digits and inner hyphens, 1-63 characters.
#define STATICLM_LABEL "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
// What a URI's path, query and fragment hold (RFC 3986's pchar; "/" and "?" are added outside).
#define STATICLM_PCHAR "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})"
#define STATICLM_DUR_TIME "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"

// ipv4: dotted decimal without leading zeros (Python's ipaddress refuses them).
constexpr const char* kIpv4 = "^" STATICLM_OCTET "(?:\\." STATICLM_OCTET "){3}$";
// ipv6: the eight groups, or "::" with at most four groups on one side and three on the other
// (the whole grammar, any split of seven groups and the IPv4 tail, is past 255 positions).
constexpr const char* kIpv6 = "^(?:" STATICLM_HEX16 "(?::" STATICLM_HEX16 "){7}"
                              "|(?:" STATICLM_HEX16 "(?::" STATICLM_HEX16 "){0,3})?::(?:" STATICLM_HEX16 "(?::" STATICLM_HEX16 "){0,2})?"
                              "|(?:" STATICLM_HEX16 "(?::" STATICLM_HEX16 "){0,2})?::(?:" STATICLM_HEX16 "(?::" STATICLM_HEX16 "){0,3})?)$";
// hostname: RFC 1123 labels joined by dots (at most 253 characters).
constexpr const char* kHostname = "^" STATICLM_LABEL "(?:\\." STATICLM_LABEL ")*$";
// email: a local part of RFC 5322's atext with at most one inner dot, at most 64 characters
// (RFC 5321's limit), "@", a domain of labels ending in a letters-only top-level label (at most
// 254 characters in all; top-level labels hold at most 24 letters, as the longest delegated one).
#define STATICLM_ATEXT "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
constexpr const char* kEmail = "^" STATICLM_ATEXT "{1,32}(?:\\." STATICLM_ATEXT "{1,31})?@"
                               "(?:" STATICLM_LABEL "\\.)+[A-Za-z]{2,24}$";
#undef STATICLM_ATEXT
// uri: scheme "://" host [":" port] path [ "?" query ] [ "#" fragment ] (RFC 3986; URIs
// without an authority, "mailto:a@b", are valid but not generated).
constexpr const char* kUri = "^[A-Za-z][A-Za-z0-9+.-]*://" STATICLM_LABEL "(?:\\." STATICLM_LABEL ")*"
                             "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0))?"
                             "(?:/" STATICLM_PCHAR "*)*(?:\\?(?:" STATICLM_PCHAR "|[/?])*)?(?:#(?:" STATICLM_PCHAR "|[/?])*)?$";
// duration: RFC 3339 appendix A (P1Y2M3DT4H5M6S, P3W, PT0S): the units in order, each run
// contiguous as its grammar writes them.
constexpr const char* kDuration = "^P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:" STATICLM_DUR_TIME ")?"
                                  "|" STATICLM_DUR_TIME "|[0-9]+W)$";

#undef STATICLM_OCTET
#undef STATICLM_HEX16
#undef STATICLM_LABEL
#undef STATICLM_PCHAR
#undef STATICLM_DUR_TIME

}  // namespace

FormatPattern format_pattern(std::string_view name) {
  if (name == "ipv4") return {kIpv4, 15};
  if (name == "ipv6") return {kIpv6, 39};
  if (name == "hostname") return {kHostname, 253};
  if (name == "email") return {kEmail, 254};
  if (name == "uri") return {kUri, -1};
  if (name == "duration") return {kDuration, -1};
  return {nullptr, -1};
}

}  // namespace staticlm
