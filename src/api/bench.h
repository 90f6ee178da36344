// The measurement behind `staticlm bench`: prefill and decode speed of a checkpoint on the
// chosen back end (and, optionally, one vision_prefill over a full synthetic patch grid), each
// next to a ceiling measured in the same run: the read bandwidth for decode (memory-bound), the
// f32 FMA and bf16 dot-product peaks for prefill and the image encode (compute-bound). Internal
// to the library (the CLI's); the numbers, not their formatting.
//
// Ownership: run_bench owns everything it makes (checkpoint, thread pool, back end) for the
// length of the call. It measures the whole machine: run one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend_factory.h"
#include "model/weight_stats.h"

namespace staticlm::api {

// One llama-bench test on the loaded model: pp (prompt_len > 0, decode_tokens 0), tg
// (prompt_len 0: a lone <bos> is prefilled untimed, then decode_tokens decoded) or pg (both: the
// prompt then the tokens, timed together). With depth > 0 (llama-bench's -d), each run first
// prefills `depth` tokens untimed; the prompt is then appended after them (the append graphs)
// and the tokens decoded after it.
struct BenchTest {
  std::int64_t prompt_len = 0, decode_tokens = 0, depth = 0;
};

struct BenchTestResult {
  BenchTest test;
  std::vector<double> seconds_each;         // each repetition's timed seconds (prompt and decode)
  std::vector<double> prompt_seconds_each;  // each repetition's prompt (its prefill or append call; 0 for tg)
  std::vector<double> decode_seconds_each;  // each repetition's decode steps together
  double first_token_seconds = 0;           // the first repetition's prompt and its argmax (0 for tg)
  std::vector<double> decode_step_seconds;  // every repetition's decode steps, in order
  std::int64_t prefill_flops = 0;           // of the timed prompt after the depth (0 for tg)
};

struct BenchOptions {
  std::string model;
  std::int64_t prompt_len = 512;
  std::int64_t decode_tokens = 32;
  std::int64_t max_seq = 1024;
  int threads = 1;  // workers of the pool (already resolved: > 0)
  // Prefill and decode this many times on the one loaded model (llama-bench's -r), between the
  // two measurements of the ceilings.
  int repetitions = 1;
  // When not empty: these tests, each `repetitions` times (after one untimed warm-up run unless
  // !warmup: the prompt, and one decode step), instead of the one run of prompt_len then
  // decode_tokens; the results go to BenchResult::tests and the fields of that run stay empty.
  std::vector<BenchTest> tests;
  bool warmup = true;
  bool image_encode = false;
  bool f32_activations = false;
  bool resident_weights = false;  // CpuBackendOptions::resident_weights (`--no-mmap`)
  BackendChoice backend;
  std::optional<std::string> kernel_target;  // pin this kernel target (default: the best the CPU has)
  // Progress lines ("bench: measuring ..."); null: none.
  std::function<void(const std::string&)> log;
};

struct BenchImageEncode {
  std::int64_t patches = 0, tokens = 0, grid_height = 0, grid_width = 0;
  double seconds = 0;
  std::int64_t flops = 0;
};

struct BenchResult {
  std::string dispatch_target;  // the kernel target that ran
  std::string fma_peak_target;  // the target the f32 FMA peak was measured on
  // The ceilings, best of a measurement before and one after the workload (GB/s, GFLOP/s; the
  // bf16 peak is 0 without AVX-512 BF16).
  double read_bandwidth_gb_s = 0, fma_peak_gflop_s = 0, bf16_dot_peak_gflop_s = 0;
  // Whether the bf16 GEMMs ran on vdpbf16ps (the kernel target's "+BF16"); its flops per second
  // over f32 FMA's on one core (bf16_dot_probe.h; 0 without AVX-512 BF16), what the default
  // target was chosen by.
  bool bf16_dot_kernels = false;
  double bf16_dot_speed_over_fma = 0;
  // The AMX bf16 tile peak (GFLOP/s, 0 without AMX; measured with the other ceilings) and whether
  // the GEMMs ran on AMX (the "+AMX" target, with bf16 activations and bf16 or quantized weights).
  double amx_peak_gflop_s = 0;
  bool amx_kernels = false;
  // The means over the repetitions (the first token: the first repetition's), and each
  // repetition's seconds.
  double prefill_seconds = 0, time_to_first_token_seconds = 0, decode_seconds = 0;
  std::vector<double> prefill_seconds_each, decode_seconds_each;
  // Each decode step's seconds (the decode call and its argmax), in order, every repetition's:
  // on a shared machine a few steps the host preempts, and the first step's warm-up, weigh on
  // the mean; the median step says what the kernels sustain.
  std::vector<double> decode_step_seconds;
  std::int64_t prefill_flops = 0;
  std::uint64_t decode_weight_bytes = 0;  // weight bytes decode reads per token
  MatrixAlignment matrices;               // weight matrices on 64-byte lines (model/weight_stats.h)
  std::uint64_t kv_cache_bytes = 0;
  std::uint64_t decode_peak_rss_bytes = 0;   // VmRSS, highest seen during decode
  std::uint64_t process_peak_rss_bytes = 0;  // getrusage: the whole run, the bandwidth buffer included
  std::string backend_placement;             // "" for the CPU back end
  std::string quantization_scheme;           // model/weight_stats.h's name ("bf16", "q4", ...)
  std::int64_t parameters = 0;               // model/weights.h count_parameters, text and vision
  std::optional<BenchImageEncode> image;     // with image_encode
  std::vector<BenchTestResult> tests;        // BenchOptions::tests', in order
};

// llama-bench's name of a test: "pp512", "tg128" or "pp512+tg128"; " @ d512" after it at a depth.
std::string bench_test_name(const BenchTest& t);

// Throws Error (kInvalidArgument naming the flag) for options that do not fit the model.
BenchResult run_bench(const BenchOptions& options);

}  // namespace staticlm::api
