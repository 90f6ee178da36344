// A Session: one generation context over one model with the CPU back end. It prefills a prompt
// (text, token ids, or text with one image), decodes token by token, streams each token to a
// callback as soon as it is chosen, and reports statistics.
//
// Ownership and threading: a Session owns its runtime state (KV cache, buffers, the back end)
// and its thread pool (SessionOptions::threads workers), and keeps its model's shared state
// alive. One Session is used by one thread at a time; independent Sessions may run in parallel.
// The callback runs on the calling thread, between decode steps. A call while another runs on the
// same Session (from another thread, or from the callback) throws Error kInvalidArgument.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "staticlm/error.h"

namespace staticlm::api {

struct SessionOptions {
  // Static sequence length: prompt + generated tokens + 1. 0: the runtime config's (2048).
  std::int64_t max_seq = 0;
  int threads = 0;  // 0: one per hardware thread
  // The runtime config (TICO's static_gemma4_runtime.yaml keys plus staticlm's): a YAML file
  // ("" : none) and "key=value" overrides applied in order (vision_profile, image_fit,
  // prefill_buckets, mask_fill_value, ...).
  std::string config_file;
  std::vector<std::string> sets;
  // Keep prefill/vision activations f32 on bf16 weights (default: rounded to bf16 as
  // transformers does).
  bool f32_activations = false;
  // Copy the matrices decode streams into huge-page memory instead of reading them through the
  // checkpoint's memory map (CpuBackendOptions::resident_weights; `--no-mmap`).
  bool resident_weights = false;
  // Write every subgraph call's inputs and outputs to this new or empty directory ("" : off), for
  // `staticlm replay`; record_graphs limits it to some graphs.
  std::string record_dir;
  std::vector<std::string> record_graphs;
  // Where the subgraphs run: "cpu", or "plugin:PATH.so[:key=value,...]" (a back-end plug-in,
  // include/staticlm/backend_plugin.h); fallback "cpu" runs the graphs a plug-in lacks on the
  // CPU back end ("none": such a plug-in is refused, naming the graphs).
  std::string backend = "cpu";
  std::string fallback = "none";
};

// Unset fields take the checkpoint's generation_config.json defaults (greedy without one).
struct GenerateParams {
  std::optional<std::int64_t> max_new_tokens;  // else generation_config's, else 256; -1: until the cache is full (run's -n -1)
  std::optional<double> temperature;           // 0: greedy
  std::optional<std::int64_t> top_k;
  std::optional<double> top_p, min_p, repetition_penalty;
  std::optional<std::int64_t> repeat_last_n;  // the repetition penalty's window (-1: all tokens; 0: none)
  std::optional<double> presence_penalty, frequency_penalty;  // OpenAI's, on the reply's tokens; [-2, 2]
  // Top-n-sigma (<= 0: off), locally typical sampling's mass (1: off), XTC's probability (0: off)
  // and threshold (default 0.1): docs/generation.md.
  std::optional<double> top_n_sigma, typical_p, xtc_probability, xtc_threshold;
  // Mirostat 1 or 2 (0: off; it replaces the truncation samplers), its target surprise tau in
  // bits (default 5) and learning rate eta (default 0.1).
  std::optional<std::int64_t> mirostat;
  std::optional<double> mirostat_tau, mirostat_eta;
  // DRY (0: off): a token continuing a repeat of at least dry_allowed_length (default 2) tokens
  // of the last dry_penalty_last_n (-1, the default: all) loses dry_multiplier x dry_base
  // (default 1.75) ^ (repeat - allowed); repeats stop at tokens holding a breaker string
  // (default "\n", ":", "\"", "*"; an empty list: none).
  std::optional<double> dry_multiplier, dry_base;
  std::optional<std::int64_t> dry_allowed_length, dry_penalty_last_n;
  std::optional<std::vector<std::string>> dry_sequence_breakers;
  // Dynamic temperature (0: off): each step's temperature moves within temperature +- range with
  // the entropy of its distribution, raised to the exponent (default 1); llama.cpp's.
  std::optional<double> dynatemp_range, dynatemp_exponent;
  // The sampling stages in this order, by llama.cpp's names ("penalties", "dry", "top_n_sigma",
  // "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"); a stage left out is not applied.
  // Empty: the default order (docs/generation.md, "Sampling order").
  std::vector<std::string> samplers;
  std::vector<std::pair<std::int64_t, float>> logit_bias;    // (token, added to its logit; -inf bans it)
  bool ignore_eos = false;                                    // ban the EOS tokens: generate max_new_tokens
  // A JSON Schema (its JSON text) the reply must be a value of ("{}": any JSON value; see
  // docs/generation.md for the keywords enforced); "": free text. Needs the tokenizer.
  std::string json_schema;
  // With json_schema: the value may follow one thought (<|channel>...<channel|>, Gemma 4's
  // thinking), as serve allows when thinking is on.
  bool thought_first = false;
  // A GBNF grammar (llama.cpp's format; docs/generation.md) the reply must be a text of, from
  // its rule `root`; "": none. Needs the tokenizer; not with json_schema.
  std::string grammar;
  std::uint64_t seed = 0;
  std::vector<std::string> stop;  // stop when the text contains one (needs a tokenizer)
  std::string dump_logits;        // write prefill/decode logits and tokens here (safetensors; "" : off)
  // Polled on the calling thread before each layer of the prompt's prefill (so a long prompt can
  // be given up part-way, as llama.cpp's abort_callback) and after each token. True stops the
  // call with stop_reason "stopped by caller": during the prompt with no tokens, the session's
  // cache then empty and a Chat as before the call (the turn not kept). May be empty.
  std::function<bool()> should_stop;
  // The streamed text holds the control tokens and the end token too (llama.cpp's --special);
  // else they are left out. Session::generate only (a Chat's replies are kept as text).
  bool special = false;
};

// Exactly one of ids and text. With images (one file: the static layout holds one image span),
// text holds the "<|image|>" placeholder and is laid out by the runtime config's vision profile.
struct Prompt {
  std::vector<std::int64_t> ids;
  std::string text;
  std::vector<std::string> images;
};

struct GenerationStats {
  std::int64_t prompt_tokens = 0;
  std::int64_t generated_tokens = 0;
  std::int64_t decode_steps = 0;
  double prefill_seconds = 0;      // text prefill, the image encode left out
  double image_encode_seconds = 0;  // vision_prefill (0 without an image)
  double decode_seconds = 0;
  double time_to_first_token_seconds = 0;
  double prefill_tokens_per_second() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  double decode_tokens_per_second() const { return decode_seconds > 0 ? decode_steps / decode_seconds : 0; }
};

struct GenerationResult {
  std::vector<std::int64_t> tokens;  // generated, the stopping one included
  std::string stop_reason;  // "eos", "stop string", "max new tokens", "cache full", "stopped by caller"
  std::string message;               // why it stopped, in words
  std::string text;                  // the generated text, control tokens and the end token left out
                                     // ("" without a tokenizer)
  std::string text_tail;             // text held back until the end (not yet given to the callback)
  GenerationStats stats;
  std::int64_t recorded_calls = 0;   // with record_dir: subgraph calls written so far
  std::int64_t recorded_bytes = 0;
};

// Called with each token as soon as it is chosen, and the text it completes ("" without a
// tokenizer, often "" mid-character). Return false to stop (stop_reason "stopped by caller").
using TokenCallback = std::function<bool(std::int64_t token, std::string_view text)>;

class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Starts over: prefill the prompt, then sample and decode until a stop condition. Throws Error
  // for a bad prompt or params (nothing generated then).
  GenerationResult generate(const Prompt& prompt, const GenerateParams& params = {}, const TokenCallback& on_token = {});

  // Step-wise use: prefill() starts over and returns the logits after the prompt [vocab];
  // decode(token) feeds one token and returns the logits it predicts. They stay valid until
  // the next call.
  std::vector<float> prefill(const Prompt& prompt);
  std::vector<float> decode(std::int64_t token);

  std::int64_t max_seq() const;
  std::int64_t past_len() const;  // tokens in the cache as the last call left them (safe from any thread)
  // Which graphs ran where, with call counts, for a plug-in back end ("" for the CPU back end
  // or before the first prefill).
  std::string backend_placement() const;

  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace staticlm::api
