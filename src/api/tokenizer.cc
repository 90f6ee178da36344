#include "staticlm/tokenizer.h"

#include <algorithm>
#include <limits>

#include "api/guarded.h"
#include "api/model_impl.h"
#include "base/file.h"
#include "text/chat_render.h"
#include "text/detokenizer.h"

namespace staticlm::api {

Tokenizer Tokenizer::open(const std::string& model_dir) {
  return guarded([&] {
    const std::string path = path_join(model_dir, "tokenizer.json");
    if (!file_exists(path)) invalid_argument(model_dir + " has no tokenizer.json");
    auto impl = std::make_shared<Impl>();
    impl->model_dir = model_dir;
    impl->tokenizer = staticlm::Tokenizer::load(path);
    return Tokenizer(std::move(impl));
  });
}

std::vector<std::int64_t> Tokenizer::encode(const std::string& text, bool add_special_tokens) const {
  return guarded([&] {
    const std::vector<int> ids = impl_->tokenizer->encode(text, add_special_tokens);
    return std::vector<std::int64_t>(ids.begin(), ids.end());
  });
}

std::optional<std::vector<std::int64_t>> Tokenizer::encode_at_most(const std::string& text, std::int64_t max_tokens,
                                                                   bool add_special_tokens, TokenCount* count) const {
  return guarded([&]() -> std::optional<std::vector<std::int64_t>> {
    staticlm::Tokenizer::TokenCount c;
    const auto ids = impl_->tokenizer->encode_at_most(text, static_cast<std::size_t>(std::max<std::int64_t>(max_tokens, 0)),
                                                      add_special_tokens, &c);
    if (!ids) {
      if (count != nullptr) *count = {static_cast<std::int64_t>(c.tokens), c.exact};
      return std::nullopt;
    }
    return std::vector<std::int64_t>(ids->begin(), ids->end());
  });
}

std::string Tokenizer::decode(const std::vector<std::int64_t>& ids, bool skip_special_tokens) const {
  return guarded([&] {
    std::vector<int> narrow;
    narrow.reserve(ids.size());
    for (const std::int64_t id : ids) {
      // Ids past int's range cannot be in any vocabulary; refuse before narrowing.
      if (id < 0 || id >= impl_->tokenizer->id_limit()) {
        out_of_range("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                     std::to_string(impl_->tokenizer->id_limit()) + ")");
      }
      narrow.push_back(static_cast<int>(id));
    }
    return impl_->tokenizer->decode(narrow, skip_special_tokens);
  });
}

std::int64_t Tokenizer::token_to_id(const std::string& token) const { return impl_->tokenizer->token_to_id(token); }

std::int64_t Tokenizer::vocab_size() const { return impl_->tokenizer->id_limit(); }

namespace {

ChatRenderResult render(const Tokenizer::Impl& impl, ChatMessages conversation, const std::string& name,
                        const ChatTemplateOptions& o) {
  ChatRenderRequest r;
  r.model_dir = impl.model_dir;
  r.template_file = o.template_file;
  r.conversation = std::move(conversation);
  r.conversation_name = name;
  r.add_generation_prompt = o.add_generation_prompt;
  r.vars = o.vars;
  if (!o.tools_json.empty()) r.conversation.tools = parse_tools_json(o.tools_json, "tools");
  return render_chat(r);
}

}  // namespace

ChatText Tokenizer::apply_chat_template(const std::string& messages_json, const ChatTemplateOptions& options) const {
  return guarded([&] {
    ChatRenderResult r = render(*impl_, parse_conversation_json(messages_json, "messages"), "messages", options);
    return ChatText{std::move(r.text), std::move(r.images)};
  });
}

std::string Tokenizer::chat_prompt(const std::string& prompt, const ChatTemplateOptions& options) const {
  return guarded([&] {
    ChatMessages c;
    c.messages.push_back({{"role", "user"}, {"content", prompt}});
    return render(*impl_, std::move(c), "prompt", options).text;
  });
}

struct TextStream::Impl {
  Tokenizer tokenizer;  // keeps the tables alive
  IncrementalDetokenizer stream;
};

TextStream::TextStream(const Tokenizer& tokenizer)
    : impl_(new Impl{tokenizer, IncrementalDetokenizer(*tokenizer.impl().tokenizer, /*skip_special_tokens=*/true)}) {}
TextStream::~TextStream() = default;
TextStream::TextStream(TextStream&&) noexcept = default;
TextStream& TextStream::operator=(TextStream&&) noexcept = default;

std::string TextStream::push(std::int64_t id) {
  return guarded([&] {
    if (id < 0 || id > std::numeric_limits<int>::max()) out_of_range("token id " + std::to_string(id) + " is outside the vocabulary");
    return impl_->stream.push(static_cast<int>(id));
  });
}

std::string TextStream::finish() { return impl_->stream.finish(); }

}  // namespace staticlm::api
