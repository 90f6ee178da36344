// The boundary of the public C++ API: internal errors (staticlm::Error) leave the library as
// staticlm::api::Error with the same category and message, so callers see one error type.
#pragma once

#include <new>
#include <utility>

#include "base/error.h"
#include "staticlm/error.h"

namespace staticlm::api {

ErrorCode error_code_for(ErrorKind kind);

// Runs f(), translating a staticlm::Error into api::Error (other exceptions pass unchanged).
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return std::forward<F>(f)();
  } catch (const staticlm::Error& e) {
    throw Error(error_code_for(e.kind()), e.what());
  }
}

}  // namespace staticlm::api
