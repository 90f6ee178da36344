#include "sampling_flags.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <utility>

#include "api/generate_params.h"
#include "base/error.h"
#include "base/file.h"
#include "commands.h"
#include "llama_cpp_flags.h"
#include "runtime/sampler_order.h"
#include "text/gbnf.h"

namespace staticlm::cli {

void add_sampling_flags(CLI::App& cmd, SamplingFlags& f) {
  cmd.add_option("-n,--max-new-tokens,--n-predict,--predict", f.max_new_tokens,
                 "tokens to generate at most per reply; -1: until an end token or a full cache (default: generation_config.json's max_new_tokens, else 256)");
  cmd.add_option("--temp,--temperature", f.temperature, "sampling temperature; 0 (or below, as llama.cpp) is greedy");
  cmd.add_option("--top-k", f.top_k, "keep the k most likely tokens (0: off)");
  cmd.add_option("--top-p", f.top_p, "nucleus sampling mass (1: off)");
  cmd.add_option("--min-p", f.min_p, "drop tokens below min_p times the best one (0: off)");
  cmd.add_option("--top-n-sigma,--top-nsigma", f.top_n_sigma,
                 "keep tokens whose logit is within N standard deviations of the best (<= 0: off)");
  cmd.add_option("--typical,--typical-p", f.typical_p, "locally typical sampling mass (1: off)");
  cmd.add_option("--xtc-probability", f.xtc_probability,
                 "XTC: the chance at each step of dropping the likeliest tokens above --xtc-threshold but the least (0: off)");
  cmd.add_option("--xtc-threshold", f.xtc_threshold, "XTC: how likely a top choice is (default 0.1; above 0.5: off)");
  cmd.add_option("--mirostat", f.mirostat,
                 "Mirostat 1 or 2: keep the reply's surprise near --mirostat-ent (replaces top-k, top-p, min-p, "
                 "top-n-sigma, typical and XTC; 0: off)");
  cmd.add_option("--mirostat-ent,--mirostat-tau", f.mirostat_tau, "Mirostat's target surprise tau, bits per token (default 5)");
  cmd.add_option("--mirostat-lr,--mirostat-eta", f.mirostat_eta, "Mirostat's learning rate eta (default 0.1)");
  cmd.add_option("--dry-multiplier", f.dry_multiplier,
                 "DRY: penalise a token that continues a repeat of the history by this x base^(length - allowed) (0: off)");
  cmd.add_option("--dry-base", f.dry_base, "DRY's base (default 1.75)");
  cmd.add_option("--dry-allowed-length", f.dry_allowed_length, "DRY: repeats this long go unpenalised (default 2)");
  cmd.add_option("--dry-penalty-last-n", f.dry_penalty_last_n, "DRY looks at the last N tokens (-1, the default: all; 0: none)");
  cmd.add_option("--dry-sequence-breaker", f.dry_sequence_breakers,
                 "DRY: a repeat never runs through a token holding this text (repeatable; replaces the defaults "
                 "\\n : \" *; 'none': no breakers)");
  cmd.add_option("--dynatemp-range", f.dynatemp_range,
                 "dynamic temperature: each step's temperature in --temp +- this, higher the less sure the model is (0: off)");
  cmd.add_option("--dynatemp-exp", f.dynatemp_exponent, "dynamic temperature: the exponent of the normalised entropy (default 1)");
  cmd.add_option("--samplers", f.samplers,
                 "the sampling stages in this order, llama.cpp's names separated by ';', e.g. "
                 "'penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature' (llama.cpp's default; a stage left "
                 "out is off; default here: Hugging Face's order)");
  cmd.add_option("--sampling-seq,--sampler-seq", f.sampling_seq,
                 "as --samplers, by letters: e penalties, d dry, s top_n_sigma, k top_k, y typ_p, p top_p, m min_p, x xtc, "
                 "t temperature (llama.cpp's default: edskypmxt)");
  cmd.add_option("--repetition-penalty,--repeat-penalty", f.repetition_penalty, "penalty for tokens already seen (1: off)");
  cmd.add_option("--repeat-last-n", f.repeat_last_n,
                 "the repetition penalty looks at the last N tokens of prompt and reply (-1, the default: all of them, "
                 "as Hugging Face; 0: none)");
  cmd.add_option("--presence-penalty", f.presence_penalty,
                 "subtract this from the logit of every token the reply already holds (-2..2; 0: off)");
  cmd.add_option("--frequency-penalty", f.frequency_penalty,
                 "subtract this times its count in the reply from a token's logit (-2..2; 0: off)");
  cmd.add_option("-s,--seed", f.seed, "random seed for sampling (default 0; -1: a random one, printed, as llama.cpp; serve: without it each request draws its own)");
  cmd.add_option("--stop,-r,--reverse-prompt", f.stops,
                 "stop a reply when its text contains this string (repeatable; llama.cpp's -r halts there too)");
  cmd.add_flag("-e,--escape,!--no-escape", f.escape,
               "-e (the default, as llama.cpp): \\n \\r \\t \\' \\\" \\\\ and \\xHH in -p, --system, --stop and "
               "--dry-sequence-breaker are the characters; --no-escape: the text as written");
  cmd.add_option("-l,--logit-bias", f.logit_bias,
                 "TOKEN_ID(+|-)BIAS: add BIAS to the token's logit, e.g. 106-2.5 or 236761+1; -inf bans it (repeatable)");
  cmd.add_flag("--ignore-eos", f.ignore_eos, "never sample the end tokens: generate -n tokens");
  cmd.add_option("-j,--json-schema", f.json_schema,
                 "the reply must be JSON valid for this JSON Schema, e.g. '{}' (any value) or '{\"type\": \"object\"}' "
                 "(docs/generation.md)");
  cmd.add_option("--json-schema-file", f.json_schema_file, "as --json-schema, the schema read from a file");
  cmd.add_option("--grammar", f.grammar,
                 "the reply must be a text of this GBNF grammar (llama.cpp's format, from its rule root), e.g. "
                 "'root ::= \"yes\" | \"no\"' (docs/generation.md)");
  cmd.add_option("--grammar-file", f.grammar_file, "as --grammar, the grammar read from a file (e.g. a .gbnf)");
}

namespace {

std::vector<std::string> escaped(const SamplingFlags& f, const std::vector<std::string>& texts) {
  if (!f.escape) return texts;
  std::vector<std::string> out;
  for (const std::string& t : texts) out.push_back(process_escapes(t));
  return out;
}

// "ID+BIAS" or "ID-BIAS" (llama.cpp's form); BIAS a number or inf.
std::pair<std::int64_t, float> parse_logit_bias(const std::string& s) {
  const auto fail = [&s]() {
    invalid_argument("--logit-bias '" + s + "': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS, e.g. 106-2.5 or 236761+1 (-inf bans it)");
  };
  const std::size_t sign = s.find_first_of("+-");
  if (sign == 0 || sign == std::string::npos || sign + 1 == s.size()) fail();
  std::int64_t id = 0;
  for (std::size_t i = 0; i < sign; ++i) {
    if (s[i] < '0' || s[i] > '9' || id > (INT64_MAX - 9) / 10) fail();
    id = id * 10 + (s[i] - '0');
  }
  const std::string value = s.substr(sign + 1);
  float bias = 0;
  if (value == "inf" || value == "INF" || value == "Inf") {
    bias = INFINITY;
  } else {
    std::size_t used = 0;
    try {
      bias = std::stof(value, &used);
    } catch (const std::exception&) {
      fail();
    }
    if (used != value.size() || !std::isfinite(bias) || value[0] == '+' || value[0] == '-') fail();
  }
  if (s[sign] == '-') bias = -bias;
  if (bias == INFINITY) invalid_argument("--logit-bias '" + s + "': +inf would force the token; give a finite bias or -inf to ban it");
  return {id, bias};
}

// A flag whose stage the order leaves out changes nothing; say so (llama.cpp is silent, and a
// --repeat-penalty that quietly does nothing is easy to miss).
void note_flags_outside_order(const SamplingFlags& f, const std::vector<SamplerStage>& order) {
  const std::string by = f.samplers ? "--samplers" : "--sampling-seq";
  if (f.temperature && *f.temperature <= 0) {  // greedy: no stage runs
    std::ostringstream t;
    t << *f.temperature;
    log_to_stderr("note: " + by + " has no effect: --temp " + t.str() + " is greedy");
    return;
  }
  const auto note = [&](bool set, const char* flag, SamplerStage stage) {
    if (set && std::find(order.begin(), order.end(), stage) == order.end()) {
      log_to_stderr("note: " + std::string(flag) + " has no effect: " + by + " leaves out " +
                    std::string(sampler_stage_name(stage)));
    }
  };
  const auto above = [](const std::optional<double>& v, double off) { return v.has_value() && *v > off; };
  note(f.repetition_penalty && *f.repetition_penalty != 1, "--repeat-penalty", SamplerStage::kPenalties);
  note(f.presence_penalty && *f.presence_penalty != 0, "--presence-penalty", SamplerStage::kPenalties);
  note(f.frequency_penalty && *f.frequency_penalty != 0, "--frequency-penalty", SamplerStage::kPenalties);
  note(above(f.dry_multiplier, 0), "--dry-multiplier", SamplerStage::kDry);
  note(above(f.top_n_sigma, 0), "--top-n-sigma", SamplerStage::kTopNSigma);
  note(f.top_k && *f.top_k > 0, "--top-k", SamplerStage::kTopK);
  note(f.typical_p && *f.typical_p < 1, "--typical", SamplerStage::kTypicalP);
  note(f.top_p && *f.top_p < 1, "--top-p", SamplerStage::kTopP);
  note(above(f.min_p, 0), "--min-p", SamplerStage::kMinP);
  note(above(f.xtc_probability, 0), "--xtc-probability", SamplerStage::kXtc);
  note(f.temperature.has_value(), "--temp", SamplerStage::kTemperature);  // > 0 here
  note(above(f.dynatemp_range, 0), "--dynatemp-range", SamplerStage::kTemperature);
}

}  // namespace

api::GenerateParams generate_params(const SamplingFlags& f) {
  // llama.cpp's -n -1 (infinity) and -2 (until the context is filled) are one here: the static
  // cache is the context.
  if (f.max_new_tokens && *f.max_new_tokens < 1 && *f.max_new_tokens != -1 && *f.max_new_tokens != -2) {
    invalid_argument("-n " + std::to_string(*f.max_new_tokens) + ": must be at least 1 (-1 or -2: until the cache is full)");
  }
  api::GenerateParams p;
  p.max_new_tokens = f.max_new_tokens;
  if (f.max_new_tokens == -1 || f.max_new_tokens == -2) p.max_new_tokens = kNoTokenLimit;
  p.temperature = f.temperature;
  // llama.cpp samples greedily at any temperature <= 0 (its --temp -1 included).
  if (f.temperature && *f.temperature < 0) p.temperature = 0.0;
  p.top_k = f.top_k;
  p.top_p = f.top_p;
  p.min_p = f.min_p;
  p.repetition_penalty = f.repetition_penalty;
  p.repeat_last_n = f.repeat_last_n;
  p.presence_penalty = f.presence_penalty;
  p.frequency_penalty = f.frequency_penalty;
  p.top_n_sigma = f.top_n_sigma;
  p.typical_p = f.typical_p;
  p.xtc_probability = f.xtc_probability;
  p.xtc_threshold = f.xtc_threshold;
  p.mirostat = f.mirostat;
  p.mirostat_tau = f.mirostat_tau;
  p.mirostat_eta = f.mirostat_eta;
  p.dry_multiplier = f.dry_multiplier;
  p.dry_base = f.dry_base;
  p.dry_allowed_length = f.dry_allowed_length;
  p.dry_penalty_last_n = f.dry_penalty_last_n;
  p.dynatemp_range = f.dynatemp_range;
  p.dynatemp_exponent = f.dynatemp_exponent;
  if (f.samplers && f.sampling_seq) invalid_argument("--samplers and --sampling-seq: give one");
  // Read here, so an error names the flag; passed on by llama.cpp's names.
  const std::vector<SamplerStage> order = f.samplers       ? sampler_order_from_list(*f.samplers, "--samplers")
                                          : f.sampling_seq ? sampler_order_from_letters(*f.sampling_seq, "--sampling-seq")
                                                           : std::vector<SamplerStage>{};
  for (const SamplerStage stage : order) p.samplers.emplace_back(sampler_stage_name(stage));
  if ((f.samplers || f.sampling_seq) && order.empty()) invalid_argument(f.samplers ? "--samplers: no sampler named" : "--sampling-seq: no sampler named");
  if (!order.empty()) note_flags_outside_order(f, order);
  if (!f.dry_sequence_breakers.empty()) {
    // llama.cpp's: the flags replace the defaults; "none" alone leaves no breakers.
    if (f.dry_sequence_breakers.size() > 1 &&
        std::find(f.dry_sequence_breakers.begin(), f.dry_sequence_breakers.end(), "none") != f.dry_sequence_breakers.end()) {
      invalid_argument("--dry-sequence-breaker none: give it alone (it clears the breakers)");
    }
    p.dry_sequence_breakers = f.dry_sequence_breakers == std::vector<std::string>{"none"} ? std::vector<std::string>{}
                                                                                          : escaped(f, f.dry_sequence_breakers);
  }
  if (f.seed < -1) invalid_argument("--seed " + std::to_string(f.seed) + ": must be at least 0 (-1: a random seed)");
  if (f.seed == -1) {
    p.seed = std::random_device{}();
    log_to_stderr("seed: " + std::to_string(p.seed) + " (--seed -1)");
  } else {
    p.seed = static_cast<std::uint64_t>(f.seed);
  }
  p.stop = escaped(f, f.stops);
  for (const std::string& b : f.logit_bias) p.logit_bias.push_back(parse_logit_bias(b));
  p.ignore_eos = f.ignore_eos;
  if (!f.json_schema.empty() && !f.json_schema_file.empty()) invalid_argument("--json-schema and --json-schema-file: give one");
  p.json_schema = f.json_schema_file.empty() ? f.json_schema : read_file(f.json_schema_file);
  if (!f.json_schema_file.empty() && p.json_schema.empty()) invalid_argument("--json-schema-file " + f.json_schema_file + ": the file is empty");
  if (!f.grammar.empty() && !f.grammar_file.empty()) invalid_argument("--grammar and --grammar-file: give one");
  p.grammar = f.grammar_file.empty() ? f.grammar : read_file(f.grammar_file);
  if (!f.grammar_file.empty() && p.grammar.empty()) invalid_argument("--grammar-file " + f.grammar_file + ": the file is empty");
  // Its syntax checked here, so an error names the flag (and the file); token forms are read
  // against the tokenizer when the model is loaded.
  if (!p.grammar.empty()) {
    Grammar::parse(p.grammar, f.grammar_file.empty() ? "--grammar" : "--grammar-file " + f.grammar_file,
                   [](std::string_view) { return std::optional<std::int64_t>(0); }, INT64_MAX);
  }
  if (!p.grammar.empty() && !p.json_schema.empty()) invalid_argument("--grammar and --json-schema: give one constraint");
  return p;
}

GenerateOptions generate_options(const SamplingFlags& f, const Checkpoint& ck) {
  return api::generate_options(generate_params(f), ck);
}

}  // namespace staticlm::cli
