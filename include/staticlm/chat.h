// A Chat: a multi-turn conversation over one model whose KV cache carries the history. Each
// user turn is laid out in the Gemma 4 chat format (or a Jinja chat template: ChatOptions::jinja)
// and only the tokens the cache does not hold yet are prefilled (the new turn, plus the previous reply's last token, which decoding never fed
// back), in the runtime config's prefill_buckets (default 16, 64, 256). When a turn does not fit
// max_seq - 1 with room for a reply, the overflow policy decides: "error" refuses it and leaves
// the chat as it was, "truncate" drops the oldest whole turns (the system prompt stays).
//
// Ownership and threading: a Chat owns its runtime state (KV cache, buffers, the back end), its
// thread pool (SessionOptions::threads workers) and, with vision, the static input builder, and
// keeps its model's shared state alive (the Model may go first). One Chat is used by one thread
// at a time; independent Chats (and Sessions) may run in parallel. The callback runs on the
// calling thread, between decode steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "staticlm/error.h"
#include "staticlm/session.h"

namespace staticlm::api {

struct ChatOptions {
  std::string system;  // the system prompt ("" : none)
  // "error" or "truncate"; "" : the runtime config's context_overflow (default "error").
  std::string overflow;
  // Set up the vision graphs (the runtime config's vision profile) so that the first turn may
  // carry an image; the whole chat then runs on that profile. Needs a vision tower.
  bool vision = false;
  // Lay every turn out with a Jinja chat template instead of the built-in Gemma 4 format:
  // `jinja` the checkpoint's own (chat_template.jinja, or tokenizer_config.json's), a non-empty
  // `chat_template` a file or the template's text (llama.cpp's --chat-template; implies jinja).
  // The whole conversation is rendered again each turn, and the cache keeps the longest prefix
  // it shares with the tokens so far (a template that rewrites earlier turns costs their
  // prefill, never correctness). `vars`: "KEY=JSON" template variables, e.g.
  // "enable_thinking=true".
  bool jinja = false;
  std::string chat_template;
  std::vector<std::string> vars;
};

struct TurnResult {
  GenerationResult result;            // the reply: tokens, text, stop reason, statistics
  std::int64_t prefilled_tokens = 0;  // tokens run through prefill for this turn
  std::int64_t reused_tokens = 0;     // context tokens taken from the cache instead
  std::int64_t dropped_turns = 0;     // "truncate": oldest turns dropped before this one
  std::int64_t context_tokens = 0;    // the context after the reply
};

class Chat {
 public:
  ~Chat();
  Chat(const Chat&) = delete;
  Chat& operator=(const Chat&) = delete;

  // Adds a user turn and generates the reply, streamed through on_token as Session::generate
  // does. Throws Error for bad params, and kOutOfRange when the turn does not fit (overflow
  // "error", or a turn too long on its own); the chat is unchanged then.
  TurnResult say(const std::string& text, const GenerateParams& params = {}, const TokenCallback& on_token = {});
  // The first turn with an image (JPEG or PNG; the text gets the image placeholder before it).
  // Only the first turn: the static profile fixes the image span's positions, where a later
  // turn does not start. Needs ChatOptions::vision.
  TurnResult say_with_image(const std::string& text, const std::string& image, const GenerateParams& params = {},
                            const TokenCallback& on_token = {});
  // Throws what say() would throw for these params, before any turn.
  void check(const GenerateParams& params) const;
  // Throws Error when `image` is not an image say_with_image can read.
  void check_image(const std::string& image) const;

  // Forgets every turn (the cache starts over); the system prompt stays.
  void reset();
  // The context tokens, turn boundaries and the cache's filled K/V slots in one file (written
  // to a temporary name, then renamed); a templated chat saves its messages too (an image part
  // by its file's absolute path, read again by load()). load() refuses a file saved for another checkpoint,
  // max_seq, profile or system prompt, or by a chat of the other layout (built-in / template),
  // naming both, and leaves the chat unchanged then.
  void save(const std::string& path) const;
  void load(const std::string& path);

  // The conversation as the last call left it: safe to read from any thread, and from the token
  // callback, while a call runs (which then answers the counts from before it).
  std::int64_t turns() const;
  std::int64_t context_tokens() const;  // the whole conversation so far
  bool empty() const;                   // no turn yet: an image may come
  std::int64_t past_len() const;        // tokens in the cache
  std::int64_t max_seq() const;
  bool vision() const;
  // What a saved chat must match: checkpoint (directory name, config.json sha256), max_seq and
  // profile ("text", or the vision profile's name).
  const std::string& identity() const;
  // Which graphs run where, for a plug-in back end ("" for the CPU back end).
  std::string backend_placement() const;

  struct Impl;
  explicit Chat(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm::api
