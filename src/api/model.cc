#include "staticlm/model.h"

#include "api/guarded.h"
#include "api/model_impl.h"
#include "base/file.h"
#include "runtime/generation_defaults.h"

namespace staticlm::api {

ErrorCode error_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return ErrorCode::kInvalidArgument;
    case ErrorKind::kInvalidFile: return ErrorCode::kInvalidFile;
    case ErrorKind::kUnsupported: return ErrorCode::kUnsupported;
    case ErrorKind::kOutOfRange: return ErrorCode::kOutOfRange;
    case ErrorKind::kInternal: return ErrorCode::kInternal;
  }
  return ErrorCode::kInternal;
}

Model Model::open(const std::string& dir) {
  return guarded([&] {
    auto impl = std::make_shared<Impl>();
    impl->checkpoint = Checkpoint::open(dir);
    const std::string tok_path = path_join(dir, "tokenizer.json");
    if (file_exists(tok_path)) {
      auto tok = std::make_shared<Tokenizer::Impl>();
      tok->model_dir = dir;
      tok->tokenizer = staticlm::Tokenizer::load(tok_path);
      impl->tokenizer = std::move(tok);
    }
    const ModelConfig& c = impl->checkpoint->config();
    ModelInfo& i = impl->info;
    i.dir = dir;
    i.vocab_size = c.text.vocab_size;
    i.num_layers = static_cast<std::int64_t>(impl->checkpoint->layers().size());
    i.hidden_size = c.text.hidden_size;
    i.max_position_embeddings = c.text.max_position_embeddings;
    i.has_vision = c.vision.has_value();
    i.has_tokenizer = impl->tokenizer != nullptr;
    i.eos_token_ids = resolve_eos_ids(c, impl->checkpoint->generation_config());
    return Model(std::move(impl));
  });
}

const ModelInfo& Model::info() const { return impl_->info; }

std::optional<Tokenizer> Model::tokenizer() const {
  if (!impl_->tokenizer) return std::nullopt;
  return Tokenizer(impl_->tokenizer);
}

}  // namespace staticlm::api
