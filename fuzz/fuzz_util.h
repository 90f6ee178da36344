// Shared by the libFuzzer targets: a fuzz input as text, and the rule every target follows:
// bad input may only end in a staticlm::Error (a one-line refusal); anything else (another
// exception, a crash, a sanitizer report) is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace staticlm::fuzz {

inline std::string text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs f; a staticlm::Error is the expected refusal of bad input.
template <typename F>
void refuse_or_accept(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

// Splits at the first NUL: two inputs from one fuzz input (e.g. a config and an override).
inline std::pair<std::string_view, std::string_view> split(std::string_view s) {
  const auto nul = s.find('\0');
  if (nul == std::string_view::npos) return {s, {}};
  return {s.substr(0, nul), s.substr(nul + 1)};
}

}  // namespace staticlm::fuzz
