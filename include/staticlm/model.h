// A checkpoint directory opened for use: config.json (+ generation_config.json), the weights
// (memory-mapped, never copied at load) and, when present, tokenizer.json.
//
// Ownership and threading: a Model is a cheap handle over shared, read-only state; copies share
// it, and every Session made from a Model keeps that state alive (a Model may be dropped before
// its sessions). Its methods are const and may be called from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/chat.h"
#include "staticlm/error.h"
#include "staticlm/session.h"
#include "staticlm/tokenizer.h"

namespace staticlm::api {

struct ModelInfo {
  std::string dir;
  std::int64_t vocab_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t max_position_embeddings = 0;
  bool has_vision = false;     // a vision tower: image prompts work
  bool has_tokenizer = false;  // tokenizer.json: text prompts work (else token ids only)
  std::vector<std::int64_t> eos_token_ids;
};

class Model {
 public:
  // Throws Error naming the directory or file that is missing or bad.
  static Model open(const std::string& dir);

  const ModelInfo& info() const;
  // The checkpoint's tokenizer; nullopt when it has no tokenizer.json.
  std::optional<Tokenizer> tokenizer() const;
  // A new conversation state (KV cache and buffers sized by options.max_seq) with its own
  // thread pool. Throws Error for bad options (naming them).
  std::unique_ptr<Session> session(const SessionOptions& options = {}) const;
  // A new multi-turn chat (staticlm/chat.h) with its own runtime state and thread pool; needs
  // the checkpoint's tokenizer.json. Throws Error for bad options (naming them).
  std::unique_ptr<Chat> chat(const SessionOptions& options = {}, const ChatOptions& chat = {}) const;

  struct Impl;
  const std::shared_ptr<const Impl>& impl() const { return impl_; }

 private:
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace staticlm::api
