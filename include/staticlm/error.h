// The error type of staticlm's public C++ API (model.h, session.h, tokenizer.h, inputs.h): every
// function that can fail throws staticlm::api::Error with a code and a one-line message that
// names the file, field or value and says what was expected. Nothing in the API aborts on bad
// input. The codes are the same categories (and numbers) as the C API's staticlm_status.
#pragma once

#include <stdexcept>
#include <string>

namespace staticlm::api {

enum class ErrorCode {
  kInvalidArgument = 1,  // a bad value from the caller (flag, option, prompt, image)
  kInvalidFile = 2,      // a file that does not parse or breaks its format
  kUnsupported = 3,      // valid input this runtime does not handle
  kOutOfRange = 4,       // an index, size or length past a limit
  kInternal = 5,         // a bug: should never happen on any input
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace staticlm::api
