// The fixture the API tests share: a tiny model (make-model --preset tiny --seed 1) made once per
// test suite in a temporary directory.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "staticlm/session.h"
#include "test_util.h"

namespace staticlm::test {

class TinyModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    make_tiny_model(dir_->file("m"), 1);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string model() { return dir_->file("m"); }
  // The options most tests run with: max_seq and threads, the rest default.
  static api::SessionOptions session_options(std::int64_t max_seq, int threads = 1) {
    api::SessionOptions o;
    o.max_seq = max_seq;
    o.threads = threads;
    return o;
  }
  // Greedy generation of up to n tokens.
  static api::GenerateParams greedy(std::int64_t n) {
    api::GenerateParams p;
    p.max_new_tokens = n;
    p.temperature = 0;
    return p;
  }
  inline static TempDir* dir_ = nullptr;
};

}  // namespace staticlm::test
