// The fixture the API tests share: a tiny model (make-model --preset tiny --seed 1) made once per
// test suite in a temporary directory.
#pragma once

#include <gtest/gtest.h>

#include <string>

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
  inline static TempDir* dir_ = nullptr;
};

}  // namespace staticlm::test
