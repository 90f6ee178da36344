// staticlm make-model --preset tiny|e2b --seed N --out DIR [--text-only] [--dtype bf16|f16|f32]
//                     [--init tame|uniform] [--tokenizer-from FILE]
#include <cstdio>
#include <iostream>
#include <string>

#include "base/error.h"
#include "commands.h"
#include "model/make_model.h"

namespace staticlm::cli {

namespace {

DType parse_weight_dtype(const std::string& s) {
  if (s == "bf16") return DType::kBF16;
  if (s == "f16") return DType::kF16;
  if (s == "f32") return DType::kF32;
  invalid_argument("--dtype: \"" + s + "\" is not a weight dtype, expected bf16, f16 or f32");
}

WeightInit parse_init(const std::string& s) {
  if (s == "tame") return WeightInit::kTame;
  if (s == "uniform") return WeightInit::kUniform;
  invalid_argument("--init: \"" + s + "\" is not a weight init, expected tame or uniform");
}

}  // namespace

void add_make_model_command(CLI::App& app) {
  struct Args {
    std::string preset = "tiny";
    std::uint64_t seed = 0;
    std::string out;
    bool text_only = false;
    std::string dtype = "bf16";
    std::string init = "uniform";
    std::string tokenizer_from = std::string(STATICLM_DEPS_DIR) + "/tokenizer-gemma3/tokenizer.json";
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("make-model", "write a random-weight Gemma 4 checkpoint in Hugging Face layout");
  cmd->add_option("--preset", args->preset, "tiny (small widths, every E2B rule) or e2b (real dimensions)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "random seed; the same seed gives byte-identical files")
      ->check(CLI::NonNegativeNumber)  // CLI11 would wrap -1 to 2^64 - 1
      ->capture_default_str();
  cmd->add_option("--out", args->out, "output directory")->required();
  cmd->add_flag("--text-only", args->text_only, "Gemma4ForCausalLM layout: no vision tower, tensors under model.");
  cmd->add_option("--dtype", args->dtype, "weight dtype: bf16, f16 or f32")->capture_default_str();
  cmd->add_option("--init", args->init,
                  "uniform: every norm weight near 1 (default; the fixtures' rule); tame: q_norm/k_norm "
                  "weights near head_dim^-1/4, attention scores of std ~1 as in a trained model")
      ->capture_default_str();
  cmd->add_option("--tokenizer-from", args->tokenizer_from,
                  "Gemma 3 tokenizer.json to derive the Gemma 4 vocabulary from (fetched by scripts/setup.sh)")
      ->capture_default_str();
  cmd->callback([args] {
    MakeModelOptions o;
    o.preset = args->preset;
    o.seed = args->seed;
    o.out_dir = args->out;
    o.text_only = args->text_only;
    o.dtype = parse_weight_dtype(args->dtype);
    o.init = parse_init(args->init);
    o.gemma3_tokenizer_path = args->tokenizer_from;
    // Progress on stderr, at most once per 5% (large presets take a while).
    int last_pct = -1;
    o.progress = [&last_pct](std::uint64_t done, std::uint64_t total) {
      const int pct = total ? static_cast<int>(100 * done / total) : 100;
      if (pct / 5 != last_pct / 5 && total > (64ull << 20)) {
        std::fprintf(stderr, "\rmake-model: writing weights %3d%% (%.2f of %.2f GB)", pct, done / 1e9, total / 1e9);
        if (pct == 100) std::fputc('\n', stderr);
      }
      last_pct = pct;
    };
    make_model(o);
    std::cout << "wrote " << args->preset << (args->text_only ? " (text only)" : "") << " model, seed " << args->seed
              << ", to " << args->out << "\n";
  });
}

}  // namespace staticlm::cli
