// The checkpoint's tokenizer (tokenizer.json, Hugging Face `tokenizers` semantics) and its chat
// template (the checkpoint's Jinja template, else the built-in Gemma 4 format).
//
// Ownership and threading: a Tokenizer is a cheap handle that shares its tables; copies may be
// used from several threads at once (every method is const). A TextStream borrows nothing (it
// holds a handle) and is for one stream on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "staticlm/error.h"

namespace staticlm::api {

struct ChatTemplateOptions {
  std::string template_file;          // a Jinja file to use instead of the checkpoint's ("" : its own)
  std::string tools_json;             // JSON array of tool schemas ("" : none)
  std::vector<std::string> vars;      // "KEY=JSON" template variables, applied last
  bool add_generation_prompt = true;  // end with the model's turn opening
};

struct ChatText {
  std::string text;                 // the rendered prompt ("<|image|>" where an image goes)
  std::vector<std::string> images;  // image sources of the messages' image parts, in order ("" : none named)
};

class Tokenizer {
 public:
  // Reads DIR/tokenizer.json. Throws kInvalidArgument when DIR has none.
  static Tokenizer open(const std::string& model_dir);

  // Token ids of UTF-8 `text`; with add_special_tokens the post-processor's (e.g. <bos>).
  std::vector<std::int64_t> encode(const std::string& text, bool add_special_tokens = false) const;
  // encode() for a text that must fit max_tokens (a prompt and max_seq): nullopt when it has
  // more, found without encoding the rest of a long text. `count` (when given) then holds the
  // number of tokens: exact for texts up to 256 KiB, else a lower bound (exact == false).
  struct TokenCount {
    std::int64_t tokens = 0;
    bool exact = false;
  };
  std::optional<std::vector<std::int64_t>> encode_at_most(const std::string& text, std::int64_t max_tokens,
                                                          bool add_special_tokens = false,
                                                          TokenCount* count = nullptr) const;
  // Text of ids (kOutOfRange names an id outside the vocabulary).
  std::string decode(const std::vector<std::int64_t>& ids, bool skip_special_tokens = false) const;
  // -1 when absent.
  std::int64_t token_to_id(const std::string& token) const;
  std::int64_t vocab_size() const;

  // Renders `messages_json` (a JSON array of {"role", "content"} messages, or {"messages",
  // "tools"}) as transformers' apply_chat_template does.
  ChatText apply_chat_template(const std::string& messages_json, const ChatTemplateOptions& options = {}) const;
  // One user message holding `prompt`, rendered the same way.
  std::string chat_prompt(const std::string& prompt, const ChatTemplateOptions& options = {}) const;

  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// Text of a stream of ids that arrive one at a time: a character spelled by several byte tokens
// comes out whole, once its last byte arrives; control tokens are left out.
class TextStream {
 public:
  explicit TextStream(const Tokenizer& tokenizer);
  ~TextStream();
  TextStream(TextStream&&) noexcept;
  TextStream& operator=(TextStream&&) noexcept;
  std::string push(std::int64_t id);  // the text this id completes (often "")
  std::string finish();                // what is still held back; starts a new stream

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm::api
