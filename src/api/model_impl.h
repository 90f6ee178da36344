// What the public handles (api::Model, api::Tokenizer) share: the opened checkpoint and its
// tokenizer. Internal to src/api; read-only once made.
#pragma once

#include <memory>
#include <string>

#include "model/checkpoint.h"
#include "staticlm/model.h"
#include "staticlm/tokenizer.h"
#include "text/tokenizer.h"

namespace staticlm::api {

struct Tokenizer::Impl {
  std::string model_dir;  // where the chat template is looked for
  std::unique_ptr<staticlm::Tokenizer> tokenizer;
};

struct Model::Impl {
  std::unique_ptr<Checkpoint> checkpoint;
  std::shared_ptr<const Tokenizer::Impl> tokenizer;  // null without tokenizer.json
  ModelInfo info;
};

}  // namespace staticlm::api
