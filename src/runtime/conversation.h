// Conversation: a multi-turn chat over one Runtime whose KV cache carries the history. Each
// user turn is chat-formatted (render_turn, the one place that formats turns) and only the
// tokens the cache does not hold yet are prefilled (Runtime::append): the new turn, plus the
// previous reply's last sampled token, which generation never fed back. Generated tokens are
// already in the cache. When a turn does not fit max_seq - 1 (with room for a reply) the
// overflow policy decides: kError refuses it and leaves the conversation as it was; kTruncate
// drops the oldest whole turns (the system prompt stays), re-prefills what is kept after the
// system prompt, and goes on.
//
// The context is token ids: [prefix: <bos> + system turn][turn 1][turn 2]...; a turn is the user
// message as formatted, the model's reply and the tokens closing it.
//
// Ownership: borrows the Runtime and the Tokenizer; both must outlive the Conversation.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/generation.h"
#include "runtime/runtime.h"
#include "text/tokenizer.h"

namespace staticlm {

enum class OverflowPolicy { kError, kTruncate };
// "error" or "truncate"; kInvalidArgument naming `where` otherwise.
OverflowPolicy parse_overflow_policy(const std::string& name, const std::string& where);

// "1 token", "5 tokens": the wording of the messages about what fits a turn.
std::string n_tokens(std::int64_t n);

struct ConversationOptions {
  std::string system;  // system prompt; empty: none
  OverflowPolicy overflow = OverflowPolicy::kError;
  // The token that closes a model turn (Gemma 4: <turn|>); -1 looks it up in the tokenizer.
  std::int64_t turn_end_token = -1;
};

struct TurnStats {
  std::int64_t prefilled_tokens = 0;  // tokens run through prefill / append for this turn
  std::int64_t reused_tokens = 0;     // context tokens taken from the cache instead
  std::int64_t dropped_turns = 0;     // kTruncate: whole turns dropped before this one
  std::int64_t context_tokens = 0;    // context after the reply
  GenerationResult result;
};

// The chat text of one user turn: with `first`, "<bos>" and the system turn (when there is a
// system prompt) come before it; `image` puts <|image|> before the text. Ends with the
// generation prompt "<|turn>model\n". Uses render_gemma4_chat (text/chat_format.h).
struct TurnText {
  std::string prefix;  // first turn: <bos> + system turn; else ""
  std::string turn;    // <|turn>user\n...<turn|>\n<|turn>model\n
};
TurnText render_turn(const std::string& system, const std::string& user, bool first, bool image);

class Conversation {
 public:
  Conversation(Runtime& runtime, const Tokenizer& tokenizer, ConversationOptions options);

  // Adds a user turn and generates the reply (streamed through on_token). The history given to
  // the sampler is the whole context. Throws kOutOfRange (conversation unchanged) when the turn
  // does not fit and the policy is kError, or when it alone does not fit even after truncation.
  TurnStats say(const std::string& user, const GenerateOptions& options, const TokenCallback& on_token);

  // The first turn with an image: `input` is the static input of prefix + turn (image span
  // laid out by the StaticInputBuilder) and `ids` the same tokens with the image placeholders
  // (what the context records). Throws kInvalidArgument unless the conversation is empty.
  TurnStats say_first_with_image(const PrefillInput& input, std::span<const std::int64_t> ids,
                                 const GenerateOptions& options, const TokenCallback& on_token);

  // A turn whose whole context the caller laid out (a chat template renders every message again
  // each turn, so a context need not extend the last one): the cache keeps the longest prefix
  // the context shares with the tokens so far (the last context token is always fed: its logits
  // choose the reply's first token) and the rest is prefilled. `image`: the static input of
  // `context` when it holds an image span ending at `image_span_end`; a cache that does not
  // hold the whole span is refilled by its full prefill (the append graphs carry no image).
  // The caller fits the context (reply_reserve); a Conversation is driven either by say /
  // say_first_with_image or by say_context, not both.
  TurnStats say_context(std::vector<std::int64_t> context, const PrefillInput* image, std::int64_t image_span_end,
                        const GenerateOptions& options, const TokenCallback& on_token);
  // What a turn leaves free for its reply: min(max_new_tokens, (max_seq - 1) / 4), at least 1.
  std::int64_t reply_reserve(const GenerateOptions& options) const;
  // How many tokens of `context` say_context would take from the cache (before its image rule:
  // a span the cache does not hold whole is prefilled again). A caller that builds a costly
  // static input only for a refill asks first.
  std::int64_t reusable(std::span<const std::int64_t> context) const;

  // Forgets every turn (the cache starts over); the system prompt stays.
  void reset();

  std::span<const std::int64_t> tokens() const { return tokens_; }
  std::int64_t turns() const { return static_cast<std::int64_t>(turn_starts_.size()); }
  bool empty() const { return tokens_.empty(); }
  const std::string& system() const { return options_.system; }

  // Save / restore: context tokens, turn boundaries and the cache's filled K/V slots in one
  // safetensors file (written to a temp name, then renamed). `identity` names the checkpoint
  // and the profile (e.g. "model=DIR;config_sha256=..;max_seq=..;profile=.."); load refuses a
  // file whose identity differs, naming both, and leaves the conversation unchanged. `extra`:
  // more metadata for the caller (e.g. a templated chat's messages); `accept` sees a file's
  // metadata after every check passed and before anything changes, and may refuse it by throwing.
  using Metadata = std::map<std::string, std::string>;
  void save(const std::string& path, const std::string& identity, const Metadata& extra = {}) const;
  void load(const std::string& path, const std::string& identity,
            const std::function<void(const Metadata&)>& accept = {});

 private:
  std::vector<std::int64_t> encode(const std::string& text) const;
  // turn_start < 0: no turn boundary recorded (say_context's callers keep their own turns).
  TurnStats finish_turn(std::vector<std::int64_t> fresh, std::int64_t turn_start, std::int64_t reused,
                        std::int64_t prefilled, const GenerationResult& r);
  // Runs `generate` on a cache rewound to `keep`, where tokens_[0, keep) agree with it. Should it
  // throw (a token callback that raises, a recorder's full disk) the cache goes back to `keep`:
  // what it filled past there belongs to a turn that was never recorded, and the next turn must
  // prefill instead of trusting it.
  template <class Generate>
  GenerationResult generate_from(std::int64_t keep, Generate&& generate);

  Runtime& rt_;
  const Tokenizer& tok_;
  ConversationOptions options_;
  std::vector<std::int64_t> tokens_;        // the context; tokens_[0, rt_.past_len()) are in the cache
  std::int64_t prefix_end_ = 0;             // end of <bos> + system turn
  std::vector<std::int64_t> turn_starts_;   // where each turn begins in tokens_
};

}  // namespace staticlm
