#include "api/bench.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <optional>
#include <span>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/bf16_dot_probe.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/fma_peak.h"
#include "backends/cpu/kernels/matmul.h"
#include "backends/cpu/vision_prefill.h"
#include "base/bandwidth.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "model/checkpoint.h"
#include "model/flops.h"
#include "model/weight_stats.h"
#include "model/weights.h"
#include "runtime/argmax.h"
#include "runtime/runtime.h"
#include "runtime/runtime_config.h"

namespace staticlm::api {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One vision_prefill over the largest image the vision config takes (default_output_length
// soft tokens, k^2 patches each: 2520 rows for E2B), every patch row valid: a full grid as close
// to square as the token count allows (42x60 patches for 280 tokens), canonical positions,
// synthetic pixels in [0, 1]. Only the run is timed, not the weight loading.
BenchImageEncode run_image_encode(const Checkpoint& ck, ThreadPool& pool, bool bf16_activations) {
  const ModelConfig& config = ck.config();
  const VisionConfig& v = *config.vision;
  const std::int64_t tokens = v.default_output_length, k = v.pooling_kernel_size;
  std::int64_t soft_h = 1;
  for (std::int64_t h = 1; h * h <= tokens; ++h) {
    if (tokens % h == 0) soft_h = h;
  }
  SubgraphProfile profile;
  profile.num_visual_tokens = tokens;
  profile.num_patches = tokens * k * k;
  profile.patch_vector_size = 3 * v.patch_size * v.patch_size;
  profile.patch_grid_height = soft_h * k;
  profile.patch_grid_width = tokens / soft_h * k;
  const TensorStore& store = ck.weights();
  auto vision = cpu::VisionPrefill::create(config, [&store](const std::string& name) { return store.get(name); },
                                           profile, bf16_activations);

  std::vector<float> pixels(static_cast<std::size_t>(profile.num_patches * profile.patch_vector_size));
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<float>((i * 37) % 256) / 255.0f;
  std::vector<float> out(static_cast<std::size_t>(tokens * config.text.hidden_size));
  const auto t0 = std::chrono::steady_clock::now();
  vision->run(pixels.data(), out.data(), &pool);
  BenchImageEncode r;
  r.seconds = seconds_since(t0);
  r.patches = profile.num_patches;
  r.tokens = tokens;
  r.grid_height = profile.patch_grid_height;
  r.grid_width = profile.patch_grid_width;
  r.flops = vision_encode_flops(v, config.text.hidden_size, r.patches, tokens);
  return r;
}

// The resident set now (VmRSS: anonymous memory plus the mapped weight pages), in bytes.
std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// The process's peak resident set so far, in bytes. It includes the read-bandwidth buffer
// (1 GiB, freed before the model loads), so it is only informative for models larger than that.
std::uint64_t process_peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

// The machine's limits, measured on all pool threads; a second measurement keeps the best of
// each, since on a shared machine a neighbour can take a core or the memory bus for the
// seconds one measurement lasts.
// The read ceiling is measured on the kind of memory the weights are read from (huge pages with
// --no-mmap).
void measure_ceilings(ThreadPool& pool, bool huge_pages, BenchResult& r) {
  r.read_bandwidth_gb_s = std::max(r.read_bandwidth_gb_s, measure_read_bandwidth(pool, std::size_t{1} << 30, 5, huge_pages));
  r.fma_peak_gflop_s = std::max(r.fma_peak_gflop_s, cpu::measure_fma_peak_gflop_s(pool));
  r.bf16_dot_peak_gflop_s = std::max(r.bf16_dot_peak_gflop_s, cpu::measure_bf16_dot_peak_gflop_s(pool));
  r.amx_peak_gflop_s = std::max(r.amx_peak_gflop_s, cpu::measure_amx_peak_gflop_s(pool));
}

void log(const BenchOptions& o, const std::string& line) {
  if (o.log) o.log(line);
}

// The tokens a test feeds before it decodes: the depth's then the prompt's (the depth's prompt
// holds the <bos>; without a depth, tg's lone <bos> takes a position).
std::int64_t fed_tokens(const BenchTest& t) {
  return t.depth > 0 ? t.depth + t.prompt_len : std::max<std::int64_t>(t.prompt_len, 1);
}

// The checks of a test list: each test names tokens, and its prompt (a lone <bos> for tg) and
// tokens fit max_seq.
void check_tests(const BenchOptions& a) {
  for (const BenchTest& t : a.tests) {
    const std::string name = bench_test_name(t);
    if (t.prompt_len < 0 || t.decode_tokens < 0 || t.depth < 0 || (t.prompt_len == 0 && t.decode_tokens == 0)) {
      invalid_argument("bench: test " + name + ": expected a prompt or tokens to generate (counts >= 0, not both 0)");
    }
    const std::int64_t positions = fed_tokens(t) + t.decode_tokens;
    if (positions > a.max_seq - 1) {
      invalid_argument("bench: test " + name + " needs " + std::to_string(positions) + " positions; max_seq " +
                       std::to_string(a.max_seq) + " holds " + std::to_string(a.max_seq - 1) +
                       " (one slot is kept); raise --max-seq");
    }
  }
}

// A fixed prompt of ordinary text ids after <bos>; speed does not depend on which ids.
std::vector<std::int64_t> bench_prompt(const ModelConfig& config, std::int64_t tokens) {
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(tokens));
  prompt[0] = config.text.bos_token_id;
  for (std::size_t i = 1; i < prompt.size(); ++i) prompt[i] = 1000 + static_cast<std::int64_t>(i);
  return prompt;
}

}  // namespace

std::string bench_test_name(const BenchTest& t) {
  const std::string pp = "pp" + std::to_string(t.prompt_len), tg = "tg" + std::to_string(t.decode_tokens);
  const std::string depth = t.depth > 0 ? " @ d" + std::to_string(t.depth) : "";
  if (t.prompt_len > 0 && t.decode_tokens > 0) return pp + "+" + tg + depth;
  return (t.decode_tokens > 0 ? tg : pp) + depth;
}

namespace {

// The tests on a ready runtime: a warm-up run each (when `warmup`), then the timed repetitions.
std::vector<BenchTestResult> run_tests(const BenchOptions& a, const std::vector<BenchTest>& tests, bool warmup,
                                       const Checkpoint& ck, Runtime& runtime, BenchResult& r) {
  std::vector<BenchTestResult> results;
  for (const BenchTest& t : tests) {
    const std::string name = bench_test_name(t);
    log(a, "bench: " + name + "...");
    const std::vector<std::int64_t> ids = bench_prompt(ck.config(), fed_tokens(t));
    const std::span<const std::int64_t> depth(ids.data(), static_cast<std::size_t>(t.depth)),
        prompt(ids.data() + t.depth, ids.size() - static_cast<std::size_t>(t.depth));
    BenchTestResult out;
    out.test = t;
    if (t.prompt_len > 0) out.prefill_flops = append_flops(ck.config(), ck.layers(), t.depth, t.prompt_len);
    // The depth is prefilled once (untimed); each run rewinds to it (the slots after it are
    // masked, then overwritten), as llama-bench restores its state after the depth.
    const std::int64_t after_depth = t.depth > 0 ? argmax_first(runtime.prefill_tokens(depth)) : 0;
    // One run: the prompt (timed unless tg; a lone <bos> untimed), then `steps` decode steps.
    // `record`: keep its times.
    const auto run = [&](std::int64_t steps, bool record) {
      if (t.depth > 0) runtime.rewind(t.depth);
      std::int64_t token = after_depth;
      const auto start = std::chrono::steady_clock::now();
      if (t.depth == 0 || t.prompt_len > 0) {
        const std::span<const float> logits = t.depth == 0 ? runtime.prefill_tokens(prompt) : runtime.append(prompt);
        if (record) out.prompt_seconds_each.push_back(t.prompt_len > 0 ? seconds_since(start) : 0.0);
        token = argmax_first(logits);
        if (record && out.prompt_seconds_each.size() == 1 && t.prompt_len > 0) out.first_token_seconds = seconds_since(start);
      }
      const auto decode_start = std::chrono::steady_clock::now();
      for (std::int64_t i = 0; i < steps; ++i) {
        const auto step = std::chrono::steady_clock::now();
        token = argmax_first(runtime.decode(token));
        if (record) out.decode_step_seconds.push_back(seconds_since(step));
        r.decode_peak_rss_bytes = std::max(r.decode_peak_rss_bytes, resident_bytes());  // a read of /proc: microseconds
      }
      if (!record) return;
      out.decode_seconds_each.push_back(seconds_since(decode_start));
      out.seconds_each.push_back(seconds_since(t.prompt_len > 0 ? start : decode_start));
    };
    if (warmup) run(std::min<std::int64_t>(t.decode_tokens, 1), false);
    for (int rep = 0; rep < a.repetitions; ++rep) {
      if (a.repetitions > 1) log(a, "bench: " + name + " run " + std::to_string(rep + 1) + " of " + std::to_string(a.repetitions) + "...");
      run(t.decode_tokens, true);
    }
    results.push_back(std::move(out));
  }
  return results;
}

}  // namespace

BenchResult run_bench(const BenchOptions& a) {
  if (a.repetitions < 1 || a.repetitions > 1000) {
    invalid_argument("-r " + std::to_string(a.repetitions) + ": expected 1 to 1000 repetitions");
  }
  if (!a.tests.empty()) {
    check_tests(a);
  } else {
    if (a.prompt_len < 1) invalid_argument("-p " + std::to_string(a.prompt_len) + ": the prompt needs at least 1 token");
    if (a.decode_tokens < 1) invalid_argument("-n " + std::to_string(a.decode_tokens) + ": must be at least 1");
    if (a.prompt_len + a.decode_tokens > a.max_seq - 1) {
      invalid_argument("bench: -p " + std::to_string(a.prompt_len) + " plus -n " + std::to_string(a.decode_tokens) +
                       " tokens do not fit max_seq " + std::to_string(a.max_seq) + " (one slot is kept); raise --max-seq");
    }
  }
  check_backend_choice(a.backend);
  if (a.kernel_target) cpu::select_kernel_target(*a.kernel_target);
  auto ck = Checkpoint::open(a.model);
  if (a.max_seq > ck->config().text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(a.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(ck->config().text.max_position_embeddings));
  }
  if (a.image_encode && !ck->config().vision) {
    invalid_argument("bench: --image-encode needs a model with a vision tower; " + a.model + " is text-only");
  }
  ThreadPool pool(a.threads);
  BenchResult r;
  r.dispatch_target = cpu::kernel_target();
  r.fma_peak_target = cpu::fma_peak_target();
  r.bf16_dot_speed_over_fma = cpu::bf16_dot_speed_over_fma();
  r.bf16_dot_kernels = cpu::bf16_dot_kernels();
  const std::int64_t amx_gemms_before = cpu::amx_gemm_calls();
  log(a, "bench: measuring memory read bandwidth and compute peaks...");
  measure_ceilings(pool, a.resident_weights, r);

  SubgraphProfile profile;
  profile.max_seq = a.max_seq;
  // A test at a depth appends its prompt through the append graphs, of the buckets a chat uses.
  if (std::any_of(a.tests.begin(), a.tests.end(), [](const BenchTest& t) { return t.depth > 0; })) {
    profile.append_lengths = append_buckets_for(RuntimeConfig{}, a.max_seq);
  }
  CpuBackendOptions bo;
  bo.pool = &pool;
  bo.bf16_activations = !a.f32_activations;
  bo.resident_weights = a.resident_weights;
  auto backend = create_backend(a.backend, *ck, profile, bo);
  RuntimeOptions ro;
  ro.pool = &pool;
  auto runtime = Runtime::create(*backend, ck->config(), ck->layers(), ro);

  r.decode_peak_rss_bytes = resident_bytes();
  // Without a test list: one pp+tg test, not warmed up (the cold first run counts), its prompt
  // and decode times kept apart.
  if (!a.tests.empty()) {
    r.tests = run_tests(a, a.tests, a.warmup, *ck, *runtime, r);
  } else {
    const BenchTestResult one = std::move(run_tests(a, {{a.prompt_len, a.decode_tokens}}, false, *ck, *runtime, r).front());
    const auto mean = [](const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size()); };
    r.prefill_seconds_each = one.prompt_seconds_each;
    r.decode_seconds_each = one.decode_seconds_each;
    r.prefill_seconds = mean(r.prefill_seconds_each);
    r.decode_seconds = mean(r.decode_seconds_each);
    r.time_to_first_token_seconds = one.first_token_seconds;
    r.decode_step_seconds = one.decode_step_seconds;
    r.prefill_flops = one.prefill_flops;
  }
  // What decode must hold: the weights it reads per token and the KV cache.
  r.kv_cache_bytes = static_cast<std::uint64_t>(runtime->cache().bytes());
  if (a.image_encode) {
    log(a, "bench: encoding one synthetic image...");
    r.image = run_image_encode(*ck, pool, !a.f32_activations);
  }
  // The GEMMs ran on AMX: the "+AMX" target, and weights and activations it takes (not
  // --f32-activations, not F32 / F16 weights).
  r.amx_kernels = cpu::amx_gemm_calls() > amx_gemms_before;
  log(a, "bench: measuring the ceilings again...");
  measure_ceilings(pool, a.resident_weights, r);
  r.process_peak_rss_bytes = process_peak_rss_bytes();
  r.decode_weight_bytes = decode_weight_bytes(*ck);
  r.matrices = matrix_alignment(ck->weights());
  r.backend_placement = backend_placement(*backend, /*with_calls=*/false);
  r.quantization_scheme = quantization_scheme(*ck);
  r.parameters = count_parameters(ck->config()).total();
  return r;
}

}  // namespace staticlm::api
