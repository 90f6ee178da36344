#include "runtime/runtime.h"

#include <algorithm>
#include <cmath>

#include "backends/subgraph_contract.h"
#include "base/error.h"

namespace staticlm {

namespace {

// The backend's graphs must be the contract's: same tensors in the same order with the same
// dtypes and shapes. A fixed axis where the contract allows a dynamic one is accepted.
void check_backend(const Backend& b, const ModelConfig& config, const std::vector<LayerInfo>& layers) {
  for (const SubgraphSignature& want : gemma4_subgraph_signatures(config, layers, b.profile())) {
    const SubgraphSignature* have = b.find(want.name);
    if (have == nullptr) {
      if (want.name == kVisionPrefill || want.name == kMultimodalFusion) continue;  // text-only use is fine
      if (want.name.rfind("decoder_layer_append_", 0) == 0) continue;  // optional: decode steps instead
      invalid_argument("backend " + b.name() + " lacks subgraph " + want.name);
    }
    auto compare = [&](const std::vector<TensorSpec>& h, const std::vector<TensorSpec>& w, const char* role) {
      if (h.size() != w.size()) {
        invalid_argument("backend " + b.name() + ": subgraph " + want.name + " has " + std::to_string(h.size()) + " " +
                         role + "s, expected " + std::to_string(w.size()));
      }
      for (std::size_t i = 0; i < h.size(); ++i) {
        const bool dyn_ok = h[i].dynamic_axis == w[i].dynamic_axis || h[i].dynamic_axis < 0;
        if (h[i].dtype != w[i].dtype || h[i].shape != w[i].shape || !dyn_ok) {
          invalid_argument("backend " + b.name() + ": subgraph " + want.name + " " + role + " " +
                           std::to_string(i) + " (" + h[i].name + ") is " + dtype_name(h[i].dtype) + " " +
                           h[i].shape.to_string() + ", expected " + dtype_name(w[i].dtype) + " " +
                           w[i].shape.to_string());
        }
      }
    };
    compare(have->inputs, want.inputs, "input");
    compare(have->outputs, want.outputs, "output");
  }
}

// options.should_stop, polled by the prefill or append of one generate call (stop_point).
class StopPolled {
 public:
  StopPolled(RuntimeState& st, const GenerateOptions& options) : st_(st) { st_.should_stop = options.should_stop; }
  ~StopPolled() { st_.should_stop = nullptr; }
  StopPolled(const StopPolled&) = delete;
  StopPolled& operator=(const StopPolled&) = delete;

 private:
  RuntimeState& st_;
};

// Adapts a Runtime to the generation loop.
class RuntimeSource : public TokenSource {
 public:
  RuntimeSource(Runtime& rt, const PrefillInput& in) : rt_(rt), in_(in) {}
  std::span<const float> prefill() override { return rt_.prefill(in_); }
  std::span<const float> decode(std::int64_t token) override { return rt_.decode(token); }
  std::int64_t remaining_capacity() const override { return rt_.remaining_capacity(); }
  std::int64_t prompt_tokens() const override { return in_.valid_length; }
  std::int64_t max_seq() const override { return rt_.max_seq(); }

 private:
  Runtime& rt_;
  const PrefillInput& in_;
};

// The append loop's prefill step is an append.
class AppendSource : public TokenSource {
 public:
  AppendSource(Runtime& rt, std::span<const std::int64_t> tokens) : rt_(rt), tokens_(tokens) {}
  std::span<const float> prefill() override { return rt_.append(tokens_); }
  std::span<const float> decode(std::int64_t token) override { return rt_.decode(token); }
  std::int64_t remaining_capacity() const override { return rt_.remaining_capacity(); }
  std::int64_t prompt_tokens() const override { return static_cast<std::int64_t>(tokens_.size()); }
  std::int64_t max_seq() const override { return rt_.max_seq(); }

 private:
  Runtime& rt_;
  std::span<const std::int64_t> tokens_;
};

}  // namespace

std::unique_ptr<Runtime> Runtime::create(Backend& backend, const ModelConfig& config,
                                         const std::vector<LayerInfo>& layers, const RuntimeOptions& options) {
  if (config.text.use_bidirectional_attention) {
    unsupported("config.json: text_config.use_bidirectional_attention \"" + *config.text.use_bidirectional_attention +
                "\" is not supported: the runtime builds causal masks only (E2B has null)");
  }
  if (!(options.mask_fill_value < 0) || !std::isfinite(options.mask_fill_value)) {
    invalid_argument("mask_fill_value " + std::to_string(options.mask_fill_value) + ": expected a finite negative number");
  }
  check_backend(backend, config, layers);
  std::unique_ptr<Runtime> rt(new Runtime());
  rt->state_ = std::make_unique<RuntimeState>(backend, config, layers, options.mask_fill_value, options.pool);
  rt->prefiller_ = std::make_unique<Prefiller>(*rt->state_);
  rt->decoder_ = std::make_unique<TokenGenerator>(*rt->state_);
  rt->appender_ = std::make_unique<Appender>(*rt->state_);
  return rt;
}

std::span<const float> Runtime::prefill(const PrefillInput& input) { return prefiller_->run(*state_, input); }

std::span<const float> Runtime::prefill_tokens(std::span<const std::int64_t> prompt) {
  const std::int64_t s = state_->max_seq, t = static_cast<std::int64_t>(prompt.size());
  if (t < 1 || t > s - 1) {
    out_of_range("prompt of " + std::to_string(t) + " tokens does not fit: max_seq " + std::to_string(s) +
                 " takes 1 to " + std::to_string(s - 1) + " prompt tokens (one slot is kept for decoding)");
  }
  padded_.assign(static_cast<std::size_t>(s), state_->config.text.pad_token_id);
  std::copy(prompt.begin(), prompt.end(), padded_.begin());
  return prefill(PrefillInput{padded_, t, {}});
}

std::span<const float> Runtime::decode(std::int64_t token) { return decoder_->step(*state_, token); }

std::span<const float> Runtime::append(std::span<const std::int64_t> tokens) {
  RuntimeState& st = *state_;
  const std::int64_t s = st.max_seq, n = static_cast<std::int64_t>(tokens.size());
  if (n == 0) invalid_argument("append: no tokens");
  if (!st.prefilled) rewind(0);
  if (st.past_len + n > s - 1) {
    out_of_range("append: " + std::to_string(n) + " tokens after " + std::to_string(st.past_len) +
                 " in the cache do not fit: max_seq " + std::to_string(s) + " holds " + std::to_string(s - 1) +
                 " (one slot is kept for decoding)");
  }
  std::span<const float> logits;
  std::int64_t done = 0;
  while (done < n) {
    const std::int64_t q = appender_->pick_bucket(s, st.past_len, n - done);
    if (q == 0) {
      stop_point(st);
      st.prefilled = true;  // the cache holds what came before (possibly nothing)
      logits = decoder_->step(st, tokens[static_cast<std::size_t>(done)]);
      ++done;
      continue;
    }
    const std::int64_t take = std::min(q, n - done);
    logits = appender_->run(st, q, tokens.subspan(static_cast<std::size_t>(done), static_cast<std::size_t>(take)),
                            done + take == n);
    done += take;
  }
  return logits;
}

std::span<const float> Runtime::prefill_bucketed(std::span<const std::int64_t> prompt) {
  const std::int64_t s = state_->max_seq, t = static_cast<std::int64_t>(prompt.size());
  if (t < 1 || t > s - 1) {
    out_of_range("prompt of " + std::to_string(t) + " tokens does not fit: max_seq " + std::to_string(s) +
                 " takes 1 to " + std::to_string(s - 1) + " prompt tokens (one slot is kept for decoding)");
  }
  rewind(0);
  return append(prompt);
}

void Runtime::rewind(std::int64_t past_len) {
  RuntimeState& st = *state_;
  if (past_len < 0 || past_len > st.past_len) {
    out_of_range("rewind: past_len " + std::to_string(past_len) + " outside [0, " + std::to_string(st.past_len) + "]");
  }
  if (past_len == 0) {
    st.cache.reset();
    st.prefilled = false;
  }
  st.past_len = past_len;
}

void Runtime::set_restored(std::int64_t past_len) {
  if (past_len < 0 || past_len > state_->max_seq - 1) {
    out_of_range("restore: past_len " + std::to_string(past_len) + " outside [0, " +
                 std::to_string(state_->max_seq - 1) + "]");
  }
  state_->past_len = past_len;
  state_->prefilled = past_len > 0;
}

GenerationResult Runtime::generate_append(std::span<const std::int64_t> tokens, std::span<const std::int64_t> history,
                                          const GenerateOptions& options, const TokenCallback& on_token) {
  AppendSource source(*this, tokens);
  const StopPolled polled(*state_, options);
  return staticlm::generate(source, history, options, on_token);
}

GenerationResult Runtime::generate(const PrefillInput& input, const GenerateOptions& options,
                                   const TokenCallback& on_token) {
  RuntimeSource source(*this, input);
  const std::int64_t n = std::clamp<std::int64_t>(input.valid_length, 0, static_cast<std::int64_t>(input.llm_input_ids.size()));
  const auto history = input.llm_input_ids.first(static_cast<std::size_t>(n));
  const StopPolled polled(*state_, options);
  return staticlm::generate(source, history, options, on_token);
}

GenerationResult Runtime::generate_tokens(std::span<const std::int64_t> prompt, const GenerateOptions& options,
                                          const TokenCallback& on_token) {
  const std::int64_t s = state_->max_seq, t = static_cast<std::int64_t>(prompt.size());
  if (t < 1 || t > s - 1) {
    out_of_range("prompt of " + std::to_string(t) + " tokens does not fit: max_seq " + std::to_string(s) +
                 " takes 1 to " + std::to_string(s - 1) + " prompt tokens (one slot is kept for decoding)");
  }
  std::vector<std::int64_t> padded(static_cast<std::size_t>(s), state_->config.text.pad_token_id);
  std::copy(prompt.begin(), prompt.end(), padded.begin());
  return generate(PrefillInput{padded, t, {}}, options, on_token);
}

}  // namespace staticlm
