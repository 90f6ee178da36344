#include "runtime/conversation.h"

#include <algorithm>

#include "base/error.h"
#include "tensor/safetensors.h"
#include "text/chat_format.h"

namespace staticlm {

namespace {

constexpr const char* kFormat = "staticlm-conversation/1";

}  // namespace

std::string n_tokens(std::int64_t n) { return std::to_string(n) + (n == 1 ? " token" : " tokens"); }

OverflowPolicy parse_overflow_policy(const std::string& name, const std::string& where) {
  if (name == "error") return OverflowPolicy::kError;
  if (name == "truncate") return OverflowPolicy::kTruncate;
  invalid_argument(where + ": '" + name + "' is not one of: error, truncate");
}

TurnText render_turn(const std::string& system, const std::string& user, bool first, bool image) {
  TurnText t;
  ChatOptions o;
  if (first) {
    if (system.empty()) {
      t.prefix = o.bos_token;
    } else {
      ChatMessage sys{ChatRole::kSystem, {ChatPart{ChatPart::Type::kText, system, ""}}, true};
      ChatOptions so;
      so.add_generation_prompt = false;
      t.prefix = render_gemma4_chat(std::span(&sys, 1), so).text;
    }
  }
  ChatMessage m{ChatRole::kUser, {}, !image};
  if (image) m.parts.push_back(ChatPart{ChatPart::Type::kImage, "", ""});
  m.parts.push_back(ChatPart{ChatPart::Type::kText, user, ""});
  o.bos_token = "";
  t.turn = render_gemma4_chat(std::span(&m, 1), o).text;
  return t;
}

Conversation::Conversation(Runtime& runtime, const Tokenizer& tokenizer, ConversationOptions options)
    : rt_(runtime), tok_(tokenizer), options_(std::move(options)) {
  if (options_.turn_end_token < 0) options_.turn_end_token = tok_.token_to_id("<turn|>");
  if (options_.turn_end_token < 0) invalid_argument("conversation: the tokenizer has no <turn|> token");
}

std::vector<std::int64_t> Conversation::encode(const std::string& text) const {
  const std::vector<int> ids = tok_.encode(text);
  return {ids.begin(), ids.end()};
}

std::int64_t Conversation::reply_reserve(const GenerateOptions& options) const {
  return std::max<std::int64_t>(1, std::min(options.max_new_tokens, (rt_.max_seq() - 1) / 4));
}

template <class Generate>
GenerationResult Conversation::generate_from(std::int64_t keep, Generate&& generate) {
  rt_.rewind(keep);
  try {
    return generate();
  } catch (...) {
    rt_.rewind(std::min(keep, rt_.past_len()));
    throw;
  }
}

void Conversation::reset() {
  tokens_.clear();
  turn_starts_.clear();
  prefix_end_ = 0;
  rt_.rewind(0);
}

TurnStats Conversation::say(const std::string& user, const GenerateOptions& options, const TokenCallback& on_token) {
  const bool first = tokens_.empty();
  const TurnText text = render_turn(options_.system, user, first, false);
  std::vector<std::int64_t> prefix = first ? encode(text.prefix) : std::vector<std::int64_t>{};
  std::vector<std::int64_t> closing;  // ends the previous reply as the chat format does
  if (!first) {
    if (tokens_.back() != options_.turn_end_token) closing.push_back(options_.turn_end_token);
    const auto nl = encode("\n");
    closing.insert(closing.end(), nl.begin(), nl.end());
  }
  const std::vector<std::int64_t> turn = encode(text.turn);
  const std::int64_t cap = rt_.max_seq() - 1, reserve = reply_reserve(options);
  const std::int64_t added = static_cast<std::int64_t>(prefix.size() + closing.size() + turn.size());

  // The context this turn runs on, and how much of the cache it keeps.
  std::vector<std::int64_t> context = tokens_;
  std::vector<std::int64_t> starts = turn_starts_;
  std::int64_t keep = std::min(rt_.past_len(), static_cast<std::int64_t>(tokens_.size())), dropped = 0;
  if (static_cast<std::int64_t>(context.size()) + added + reserve > cap) {
    const std::string need = "the next turn needs " + n_tokens(added) + " plus " + n_tokens(reserve) +
                             " for the reply after " + n_tokens(static_cast<std::int64_t>(tokens_.size())) +
                             " of context, but max_seq " + std::to_string(rt_.max_seq()) + " holds " +
                             n_tokens(cap);
    if (options_.overflow == OverflowPolicy::kError) {
      out_of_range("chat: " + need + " (context_overflow=error; /reset, or set context_overflow=truncate)");
    }
    if (turn_starts_.empty()) {
      out_of_range("chat: " + need + " (no earlier turn to drop: a shorter turn, a smaller -n or a larger max_seq)");
    }
    // Drop the oldest whole turns until it fits; with every turn gone the closing goes too.
    const std::int64_t n_turns = static_cast<std::int64_t>(starts.size());
    std::int64_t k = 1;
    auto size_after = [&](std::int64_t drop) {
      if (drop >= n_turns) return prefix_end_ + static_cast<std::int64_t>(turn.size()) + reserve;
      return prefix_end_ + static_cast<std::int64_t>(context.size()) - starts[drop] + added + reserve;
    };
    while (k < n_turns && size_after(k) > cap) ++k;
    if (size_after(k) > cap) out_of_range("chat: " + need + ", and dropping every earlier turn is not enough");
    std::vector<std::int64_t> kept(context.begin(), context.begin() + prefix_end_);
    std::vector<std::int64_t> kept_starts;
    if (k < n_turns) {
      const std::int64_t shift = starts[k] - prefix_end_;
      kept.insert(kept.end(), context.begin() + starts[k], context.end());
      for (std::int64_t i = k; i < n_turns; ++i) kept_starts.push_back(starts[i] - shift);
    } else {
      closing.clear();
    }
    context = std::move(kept);
    starts = std::move(kept_starts);
    keep = std::min(keep, prefix_end_);
    dropped = k;
  }
  context.insert(context.end(), prefix.begin(), prefix.end());
  context.insert(context.end(), closing.begin(), closing.end());
  const std::int64_t turn_start = static_cast<std::int64_t>(context.size());
  context.insert(context.end(), turn.begin(), turn.end());

  const auto fresh = std::span(context).subspan(static_cast<std::size_t>(keep));
  const GenerationResult r = generate_from(keep, [&] { return rt_.generate_append(fresh, context, options, on_token); });
  // Committed only now: a refused turn above left everything as it was.
  if (first) prefix_end_ = static_cast<std::int64_t>(prefix.size());
  turn_starts_ = std::move(starts);
  TurnStats stats = finish_turn(std::move(context), turn_start, keep, static_cast<std::int64_t>(fresh.size()), r);
  stats.dropped_turns = dropped;
  return stats;
}

TurnStats Conversation::say_first_with_image(const PrefillInput& input, std::span<const std::int64_t> ids,
                                             const GenerateOptions& options, const TokenCallback& on_token) {
  if (!tokens_.empty()) {
    invalid_argument("chat: an image can only come with the first turn: the static profile fixes the image span's "
                     "positions, which a later turn does not start at (/reset first)");
  }
  const GenerationResult r = generate_from(0, [&] { return rt_.generate(input, options, on_token); });
  prefix_end_ = static_cast<std::int64_t>(encode(render_turn(options_.system, "", true, false).prefix).size());
  turn_starts_.clear();
  return finish_turn({ids.begin(), ids.end()}, prefix_end_, 0, input.valid_length, r);
}

std::int64_t Conversation::reusable(std::span<const std::int64_t> context) const {
  const auto mm = std::mismatch(tokens_.begin(), tokens_.end(), context.begin(), context.end());
  return std::max<std::int64_t>(0, std::min({static_cast<std::int64_t>(mm.first - tokens_.begin()), rt_.past_len(),
                                             static_cast<std::int64_t>(context.size()) - 1}));
}

TurnStats Conversation::say_context(std::vector<std::int64_t> context, const PrefillInput* image,
                                    std::int64_t image_span_end, const GenerateOptions& options,
                                    const TokenCallback& on_token) {
  if (context.empty()) invalid_argument("chat: a turn's context is empty");
  std::int64_t keep = reusable(context);
  if (image != nullptr && keep < image_span_end) keep = 0;
  // What the cache holds, should generation fail: a later turn's prefix stops there.
  tokens_.resize(static_cast<std::size_t>(keep));
  GenerationResult r;
  std::int64_t prefilled = 0;
  if (image != nullptr && keep == 0) {
    r = generate_from(0, [&] { return rt_.generate(*image, options, on_token); });
    prefilled = image->valid_length;
  } else {
    const auto fresh = std::span(context).subspan(static_cast<std::size_t>(keep));
    r = generate_from(keep, [&] { return rt_.generate_append(fresh, context, options, on_token); });
    prefilled = static_cast<std::int64_t>(fresh.size());
  }
  return finish_turn(std::move(context), -1, keep, prefilled, r);
}

TurnStats Conversation::finish_turn(std::vector<std::int64_t> context, std::int64_t turn_start, std::int64_t reused,
                                    std::int64_t prefilled, const GenerationResult& r) {
  tokens_ = std::move(context);
  tokens_.insert(tokens_.end(), r.tokens.begin(), r.tokens.end());
  if (turn_start >= 0) turn_starts_.push_back(turn_start);
  TurnStats s;
  s.prefilled_tokens = prefilled;
  s.reused_tokens = reused;
  s.context_tokens = static_cast<std::int64_t>(tokens_.size());
  s.result = r;
  return s;
}

void Conversation::save(const std::string& path, const std::string& identity, const Metadata& extra) const {
  SafetensorsWriter w;
  const std::int64_t past = rt_.past_len();
  for (const auto& [key, value] : extra) w.add_metadata(key, value);
  w.add_metadata("format", kFormat);
  w.add_metadata("identity", identity);
  w.add_metadata("past_len", std::to_string(past));
  w.add_metadata("prefix_end", std::to_string(prefix_end_));
  w.add_metadata("system", options_.system);
  w.add_metadata("tokens", std::to_string(tokens_.size()));
  w.add_metadata("turns", std::to_string(turn_starts_.size()));
  if (!tokens_.empty()) w.add("tokens", TensorView{DType::kI64, Shape{static_cast<std::int64_t>(tokens_.size())}, tokens_.data()});
  if (!turn_starts_.empty()) {
    w.add("turn_starts", TensorView{DType::kI64, Shape{static_cast<std::int64_t>(turn_starts_.size())}, turn_starts_.data()});
  }
  const KvCache& c = rt_.cache();
  if (past > 0) {
    int layer = 0;
    for (int owned = 0; owned < c.owned_layers(); ++layer) {
      if (!c.owns(layer)) continue;
      ++owned;
      const Shape s = c.shape(layer);
      const Shape rows{s[1], past, s[3]};
      std::vector<float> k(static_cast<std::size_t>(rows.numel())), v(k.size());
      c.copy_past(layer, past, k, v);
      w.add("k." + std::to_string(layer), TensorView{DType::kF32, rows, k.data()});
      w.add("v." + std::to_string(layer), TensorView{DType::kF32, rows, v.data()});
    }
  }
  w.write(path);
}

void Conversation::load(const std::string& path, const std::string& identity,
                        const std::function<void(const Metadata&)>& accept) {
  const auto f = SafetensorsFile::open(path);
  const auto& md = f->metadata();
  auto meta = [&](const std::string& key) -> std::string {
    const auto it = md.find(key);
    if (it == md.end()) invalid_file(path + ": not a staticlm conversation (no metadata '" + key + "')");
    return it->second;
  };
  if (meta("format") != kFormat) invalid_file(path + ": format '" + meta("format") + "', expected '" + kFormat + "'");
  if (meta("identity") != identity) {
    invalid_argument(path + ": saved for " + meta("identity") + ", but this conversation runs " + identity);
  }
  auto number = [&](const std::string& key) {
    try {
      return static_cast<std::int64_t>(std::stoll(meta(key)));
    } catch (const std::exception&) {
      invalid_file(path + ": metadata " + key + " '" + meta(key) + "' is not a number");
    }
  };
  const std::int64_t past = number("past_len"), n = number("tokens"), turns = number("turns");
  const std::int64_t prefix_end = number("prefix_end");
  if (past < 0 || past > rt_.max_seq() - 1 || n < past || n > rt_.max_seq()) {
    invalid_file(path + ": past_len " + std::to_string(past) + " / tokens " + std::to_string(n) + " do not fit max_seq " +
                 std::to_string(rt_.max_seq()));
  }
  if (prefix_end < 0 || prefix_end > n) {
    invalid_file(path + ": prefix_end " + std::to_string(prefix_end) + " is outside [0, " + std::to_string(n) +
                 "] (the saved tokens)");
  }
  if (meta("system") != options_.system) {
    invalid_argument(path + ": saved with system prompt \"" + meta("system") + "\", this chat has \"" +
                     options_.system + "\"");
  }
  auto ids = [&](const char* name, std::int64_t count) {
    std::vector<std::int64_t> out;
    if (count == 0) return out;
    const TensorView t = f->get(name);
    if (t.dtype != DType::kI64 || t.shape != Shape{count}) {
      invalid_file(path + ": tensor " + name + " is " + t.shape.to_string() + ", expected I64 [" + std::to_string(count) + "]");
    }
    const auto* p = static_cast<const std::int64_t*>(t.data);
    return std::vector<std::int64_t>(p, p + count);
  };
  if (turns < 0) invalid_file(path + ": metadata turns " + std::to_string(turns) + " is negative");
  std::vector<std::int64_t> tokens = ids("tokens", n), starts = ids("turn_starts", turns);
  // Turn starts index the tokens (a later truncation cuts there), in order after the prefix; the
  // tokens are fed to the model again when the cache is rebuilt.
  for (std::size_t k = 0; k < starts.size(); ++k) {
    const std::int64_t lo = k == 0 ? prefix_end : starts[k - 1];
    if (starts[k] < lo || starts[k] > n) {
      invalid_file(path + ": turn_starts[" + std::to_string(k) + "] = " + std::to_string(starts[k]) + " is outside [" +
                   std::to_string(lo) + ", " + std::to_string(n) + "] (turns start in order within the saved tokens)");
    }
  }
  const std::int64_t vocab = rt_.config().text.vocab_size;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k] < 0 || tokens[k] >= vocab) {
      invalid_file(path + ": tokens[" + std::to_string(k) + "] = " + std::to_string(tokens[k]) + " is outside the vocabulary [0, " +
                   std::to_string(vocab) + ")");
    }
  }
  KvCache& c = rt_.mutable_cache();
  std::vector<std::pair<int, std::pair<TensorView, TensorView>>> rows;
  for (int layer = 0; past > 0 && rows.size() < static_cast<std::size_t>(c.owned_layers()); ++layer) {
    if (!c.owns(layer)) continue;
    const Shape s = c.shape(layer), want{s[1], past, s[3]};
    const TensorView k = f->get("k." + std::to_string(layer)), v = f->get("v." + std::to_string(layer));
    for (const TensorView* t : {&k, &v}) {
      if (t->dtype != DType::kF32 || t->shape != want) {
        invalid_file(path + ": layer " + std::to_string(layer) + " K/V is " + dtype_name(t->dtype) + " " +
                     t->shape.to_string() + ", expected F32 " + want.to_string());
      }
    }
    rows.push_back({layer, {k, v}});
  }
  if (accept) accept(md);
  // Everything checked: now replace the state.
  rt_.rewind(0);
  for (const auto& [layer, kv] : rows) {
    const auto count = static_cast<std::size_t>(kv.first.numel());
    c.write_append(layer, std::span(static_cast<const float*>(kv.first.data), count),
                   std::span(static_cast<const float*>(kv.second.data), count), past, 0, past);
  }
  rt_.set_restored(past);
  tokens_ = std::move(tokens);
  turn_starts_ = std::move(starts);
  prefix_end_ = prefix_end;
}

}  // namespace staticlm
