// Test helper: runs a callable that must throw staticlm::Error and returns its message (and kind),
// so each bad-input test can assert what the message names.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "base/error.h"

namespace staticlm::test {

template <typename F>
std::string error_message(F&& f, ErrorKind* kind = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (kind) *kind = e.kind();
    return e.what();
  }
  ADD_FAILURE() << "expected a staticlm::Error, nothing was thrown";
  return "";
}

}  // namespace staticlm::test

// EXPECT that `stmt` throws a staticlm::Error whose message contains every listed substring.
#define EXPECT_ERROR_WITH(stmt, ...)                                                     \
  do {                                                                                   \
    const std::string msg_ = ::staticlm::test::error_message([&] { stmt; });             \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__}) {   \
      EXPECT_NE(msg_.find(part_), std::string::npos) << "missing '" << part_ << "' in: " << msg_; \
    }                                                                                    \
  } while (0)
