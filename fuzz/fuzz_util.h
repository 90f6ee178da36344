// Shared by the libFuzzer targets: a fuzz input as text, and the rule every target follows:
// bad input may only end in a staticlm::Error (a one-line refusal); anything else (another
// exception, a crash, a sanitizer report) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/error.h"
#include "model/make_model.h"

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

// The tiny model (make-model --preset tiny --seed 1, real tokenizer) in a temporary directory,
// made on the first call (call it from LLVMFuzzerInitialize: it takes seconds) and removed at exit.
inline const std::string& tiny_model() {
  // Never destroyed, so the exit handler can still read it.
  static const std::string& dir = *[] {
    auto* d = new std::string(
        (std::filesystem::temp_directory_path() / ("staticlm-fuzz-model-" + std::to_string(getpid()))).string());
    MakeModelOptions o;
    o.preset = "tiny";
    o.seed = 1;
    o.out_dir = *d;
    o.gemma3_tokenizer_path = std::string(STATICLM_DEPS_DIR) + "/tokenizer-gemma3/tokenizer.json";
    make_model(o);
    std::atexit([] { std::filesystem::remove_all(tiny_model()); });
    return d;
  }();
  return dir;
}

}  // namespace staticlm::fuzz
