// Helpers for the model-area tests: the E2B config fixture as text or as JSON to edit, and an
// assertion that parsing fails with a given error kind and exact message.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "base/file.h"
#include "model/config.h"
#include "test_util.h"

namespace staticlm::test {

inline std::string e2b_config_text() { return read_file(fixture("config/e2b_config.json")); }
inline nlohmann::json e2b_config_json() { return nlohmann::json::parse(e2b_config_text()); }
inline ModelConfig e2b_config() { return parse_model_config(e2b_config_text(), "config.json"); }

// The E2B fixture with one edit applied, as config.json text.
inline std::string e2b_edited(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = e2b_config_json();
  edit(j);
  return j.dump();
}

// Runs f, which must throw staticlm::Error of `kind` with exactly `message`.
inline void expect_error(const std::function<void()>& f, ErrorKind kind, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(error_kind_name(e.kind()), std::string(error_kind_name(kind))) << e.what();
    EXPECT_EQ(std::string(e.what()), message);
  }
}

inline void expect_config_error(const std::string& text, ErrorKind kind, const std::string& message) {
  expect_error([&] { parse_model_config(text, "config.json"); }, kind, message);
}

}  // namespace staticlm::test
