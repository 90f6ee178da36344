#include "base/error.h"

namespace staticlm {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kInvalidFile: return "invalid file";
    case ErrorKind::kUnsupported: return "unsupported";
    case ErrorKind::kOutOfRange: return "out of range";
    case ErrorKind::kInternal: return "internal";
  }
  return "unknown";
}

int exit_code_for(ErrorKind kind) { return kind == ErrorKind::kInternal ? 1 : 2; }

void throw_error(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

std::string Error::without_nul(const std::string& message) {
  if (message.find('\0') == std::string::npos) return message;
  std::string out;
  for (const char c : message) {
    if (c == '\0') out += "\\x00";
    else out += c;
  }
  return out;
}

}  // namespace staticlm
