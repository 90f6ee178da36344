#include "text/tool_calls.h"

#include <cctype>
#include <optional>

namespace staticlm {
namespace {

using ojson = nlohmann::ordered_json;
constexpr std::string_view kOpen = kToolCallOpen, kClose = kToolCallClose, kQuote = "<|\"|>";

// A recursive-descent reader of Gemma 4's argument syntax over s[pos..end).
class ArgReader {
 public:
  explicit ArgReader(std::string_view s) : s_(s) {}

  std::optional<ojson> object() {
    if (!eat('{')) return std::nullopt;
    ojson o = ojson::object();
    skip();
    if (eat('}')) return o;
    while (true) {
      skip();
      std::string key;
      if (s_.substr(pos_, kQuote.size()) == kQuote) {
        auto k = quoted();
        if (!k) return std::nullopt;
        key = *k;
      } else {
        while (pos_ < s_.size() && s_[pos_] != ':') key += s_[pos_++];
      }
      if (!eat(':')) return std::nullopt;
      auto v = value();
      if (!v) return std::nullopt;
      o[key] = *v;
      skip();
      if (eat('}')) return o;
      if (!eat(',')) return std::nullopt;
    }
  }

  bool done() const { return pos_ == s_.size(); }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<std::string> quoted() {
    pos_ += kQuote.size();
    const std::size_t end = s_.find(kQuote, pos_);
    if (end == std::string_view::npos) return std::nullopt;
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + kQuote.size();
    return out;
  }
  std::optional<ojson> value() {
    skip();
    if (s_.substr(pos_, kQuote.size()) == kQuote) {
      auto q = quoted();
      if (!q) return std::nullopt;
      return ojson(*q);
    }
    if (pos_ < s_.size() && s_[pos_] == '{') return object();
    if (eat('[')) {
      ojson a = ojson::array();
      if (eat(']')) return a;
      while (true) {
        auto v = value();
        if (!v) return std::nullopt;
        a.push_back(*v);
        if (eat(']')) return a;
        if (!eat(',')) return std::nullopt;
      }
    }
    // A bare word: a number, true/false/null, or else a string.
    std::string word;
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != '}' && s_[pos_] != ']') word += s_[pos_++];
    while (!word.empty() && std::isspace(static_cast<unsigned char>(word.back()))) word.pop_back();
    if (word == "true") return ojson(true);
    if (word == "false") return ojson(false);
    if (word == "null") return ojson(nullptr);
    try {
      std::size_t used = 0;
      if (word.find_first_of(".eE") == std::string::npos) {
        const long long i = std::stoll(word, &used);
        if (used == word.size()) return ojson(i);
      } else {
        const double d = std::stod(word, &used);
        if (used == word.size()) return ojson(d);
      }
    } catch (const std::exception&) {
    }
    return ojson(word);
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

// One call body "call:NAME{...}", or nullopt.
std::optional<ToolCall> parse_call(std::string_view body) {
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front()))) body.remove_prefix(1);
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.remove_suffix(1);
  if (body.substr(0, 5) != "call:") return std::nullopt;
  body.remove_prefix(5);
  const std::size_t brace = body.find('{');
  ToolCall call;
  call.name = std::string(body.substr(0, brace));
  if (call.name.empty()) return std::nullopt;
  if (brace == std::string_view::npos) return call;
  ArgReader r(body.substr(brace));
  auto args = r.object();
  if (!args || !r.done()) return std::nullopt;
  call.arguments = std::move(*args);
  return call;
}

}  // namespace

namespace {
constexpr std::string_view kThoughtName = "thought\n";
}  // namespace

bool may_be_thought_name(std::string_view thought) {
  return thought.size() < kThoughtName.size() && kThoughtName.substr(0, thought.size()) == thought;
}

std::string_view thought_text(std::string_view thought) {
  if (thought.substr(0, kThoughtName.size()) == kThoughtName) return thought.substr(kThoughtName.size());
  return may_be_thought_name(thought) ? std::string_view() : thought;
}

ModelReply parse_gemma4_reply(std::string_view whole) {
  ModelReply reply;
  // The thoughts first: what they hold is never a call or text.
  std::string body;
  for (std::size_t at = 0;;) {
    const std::size_t open = whole.find(kThoughtOpen, at);
    body.append(whole.substr(at, open == std::string_view::npos ? std::string_view::npos : open - at));
    if (open == std::string_view::npos) break;
    const std::size_t from = open + kThoughtOpen.size(), close = whole.find(kThoughtClose, from);
    reply.reasoning.append(thought_text(whole.substr(from, close == std::string_view::npos ? std::string_view::npos : close - from)));
    if (close == std::string_view::npos) break;
    at = close + kThoughtClose.size();
  }
  const std::string_view generated = body;
  std::size_t pos = 0;
  while (true) {
    const std::size_t open = generated.find(kOpen, pos);
    if (open == std::string_view::npos) break;
    const std::size_t close = generated.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos) break;
    auto call = parse_call(generated.substr(open + kOpen.size(), close - open - kOpen.size()));
    if (!call) {
      reply.text.append(generated.substr(pos, close + kClose.size() - pos));
    } else {
      reply.text.append(generated.substr(pos, open - pos));
      reply.tool_calls.push_back(std::move(*call));
    }
    pos = close + kClose.size();
  }
  reply.text.append(generated.substr(pos));
  return reply;
}

std::string reply_json(const ModelReply& reply) {
  ojson j = ojson::object();
  j["text"] = reply.text;
  j["tool_calls"] = ojson::array();
  for (const ToolCall& c : reply.tool_calls) {
    j["tool_calls"].push_back({{"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  if (!reply.reasoning.empty()) j["reasoning"] = reply.reasoning;
  return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

}  // namespace staticlm
