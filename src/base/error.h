// Errors: one exception type with a category, and a message that names the file, field or
// value and says what was expected. The CLI turns them into "error: <message>" and an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace staticlm {

enum class ErrorKind {
  kInvalidArgument,  // bad CLI flag, bad value from the caller
  kInvalidFile,      // a file that does not parse or breaks its format
  kUnsupported,      // valid input that this runtime does not handle
  kOutOfRange,       // an index, size or length past a limit
  kInternal,         // a bug: should never happen on any input
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  // A NUL byte in the message is kept as the text "\x00": what() is read up to the first NUL.
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(without_nul(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  static std::string without_nul(const std::string& message);
  ErrorKind kind_;
};

// Exit code the CLI uses for an error of this kind: 2 for bad input or usage, 1 for internal.
int exit_code_for(ErrorKind kind);

[[noreturn]] void throw_error(ErrorKind kind, const std::string& message);

// Short forms for the common cases.
[[noreturn]] inline void invalid_argument(const std::string& m) { throw_error(ErrorKind::kInvalidArgument, m); }
[[noreturn]] inline void invalid_file(const std::string& m) { throw_error(ErrorKind::kInvalidFile, m); }
[[noreturn]] inline void unsupported(const std::string& m) { throw_error(ErrorKind::kUnsupported, m); }
[[noreturn]] inline void out_of_range(const std::string& m) { throw_error(ErrorKind::kOutOfRange, m); }
[[noreturn]] inline void internal_error(const std::string& m) { throw_error(ErrorKind::kInternal, m); }

}  // namespace staticlm
