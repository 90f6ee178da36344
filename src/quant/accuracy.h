// The accuracy report of `staticlm quant-report` (docs/quantization.md, "Accuracy report"): how
// far a quantized checkpoint is from the checkpoint it was made from, as per-tensor weight SQNR
// and as teacher-forced logits over a fixed prompt set (NMSE, max |diff|, top-1 agreement).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "tensor/safetensors.h"

namespace staticlm::quant {

// One tensor that differs between the base and the quantized store.
struct TensorSqnr {
  std::string name;
  std::string base_dtype, quant_dtype;
  std::int64_t elements = 0;
  // 10 log10(sum w^2 / sum (w - wq)^2) over the dequantized values; +inf when they are equal
  // (a lossless dtype change).
  double sqnr_db = 0;
};

// The SQNR of every tensor of `base` that `quant` stores differently (another dtype or other
// bytes), in name order; companions (NAME_scale, NAME_zero_point) are read with their matrix.
// Matrices are dequantized row by row with the CPU backend's own code (load_weight_matrix,
// weight_row_f32). A tensor `quant` lacks is skipped (Checkpoint::open checked both stores).
std::vector<TensorSqnr> weight_sqnr(const TensorStore& base, const TensorStore& quant, ThreadPool* pool = nullptr);

// Over the tensors with a finite SQNR; `exact` counts the others.
struct SqnrSummary {
  int tensors = 0, exact = 0;
  double min_db = 0, median_db = 0, mean_db = 0;
};
SqnrSummary summarize_sqnr(const std::vector<TensorSqnr>& tensors);

// Logits of the base model (a) and the quantized one (b), position by position.
struct LogitsAgreement {
  std::int64_t positions = 0, top1_same = 0;
  double err = 0, ref = 0;  // sum (a - b)^2 and sum a^2, over every position
  double max_abs_diff = 0;

  void add(std::span<const float> a, std::span<const float> b);
  void merge(const LogitsAgreement& o);
  double nmse() const { return ref > 0 ? err / ref : 0.0; }
  double top1() const { return positions > 0 ? static_cast<double>(top1_same) / static_cast<double>(positions) : 0.0; }
};

struct PromptResult {
  std::string text;
  std::int64_t tokens = 0;  // with <bos>; one position per token
  LogitsAgreement logits;
};

struct AccuracyOptions {
  std::string base_dir, quant_dir;
  std::vector<std::string> prompts;  // empty: default_accuracy_prompts()
  std::int64_t max_seq = 0;          // 0: the longest prompt plus one
  int threads = 1;
  // Progress lines ("prompt 3/8 ..."), e.g. for stderr.
  std::function<void(const std::string& line)> progress;
};

struct AccuracyReport {
  std::string base_scheme, quant_scheme;  // model/weight_stats.h quantization_scheme
  std::int64_t max_seq = 0;
  std::vector<TensorSqnr> tensors;
  std::vector<PromptResult> prompts;
  LogitsAgreement overall;  // every position of every prompt
};

// Eight short, varied English prompts.
const std::vector<std::string>& default_accuracy_prompts();

// Opens both checkpoints, compares their weights, and runs every prompt (tokenized with the base
// checkpoint's tokenizer.json, <bos> first) teacher-forced through both models: a prefill of
// <bos>, then one decode per further token, the logits after every token compared. Errors
// (kInvalidArgument, naming the thing): the same directory twice, configs that describe
// different models, different tokenizer.json files, no tokenizer.json, an empty prompt set, a
// prompt longer than max_seq - 1; checkpoint errors as Checkpoint::open.
AccuracyReport accuracy_report(const AccuracyOptions& options);

}  // namespace staticlm::quant
