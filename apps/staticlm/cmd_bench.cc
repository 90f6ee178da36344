// staticlm bench -m DIR [-p N] [-n N] [--max-seq S] [--threads T] [--image-encode] [--json]
// [--backend cpu|plugin:PATH.so[:k=v,...]] [--fallback none|cpu]:
// prefill and decode speed of the CPU backend on a checkpoint, each next to a ceiling measured
// in the same run. Decode reads every text weight once per token (the tied LM head included; of
// the per-layer embedding table one row), so bytes-per-token x tok/s over the read bandwidth
// says how close decoding runs to the memory limit. Prefill (and, with --image-encode, one
// vision_prefill over a full patch grid) is compute-bound: its flops (model/flops.h) per second
// over the measured f32 FMA and bf16 dot-product peaks say how close it runs to the compute limit.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels/dispatch.h"
#include "backends/cpu/kernels/fma_peak.h"
#include "backends/cpu/vision_prefill.h"
#include "base/bandwidth.h"
#include "base/error.h"
#include "base/thread_pool.h"
#include "commands.h"
#include "backend_option.h"
#include "threads_option.h"
#include "kernel_target_option.h"
#include "model/checkpoint.h"
#include "model/flops.h"
#include "model/weight_stats.h"
#include "runtime/runtime.h"

namespace staticlm::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::int64_t prompt_len = 512;
  std::int64_t decode_tokens = 32;
  std::int64_t max_seq = 1024;
  int threads = 0;
  bool image_encode = false;
  bool json = false;
  bool f32_activations = false;
  std::optional<std::string> kernel_target;
  BackendChoice backend;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct ImageEncode {
  std::int64_t patches = 0, tokens = 0, grid_height = 0, grid_width = 0;
  double seconds = 0;
  std::int64_t flops = 0;
};

// One vision_prefill over the largest image the vision config takes (default_output_length
// soft tokens, k^2 patches each: 2520 rows for E2B), every patch row valid: a full grid as close
// to square as the token count allows (42x60 patches for 280 tokens), canonical positions,
// synthetic pixels in [0, 1]. Only the run is timed, not the weight loading.
ImageEncode run_image_encode(const Checkpoint& ck, ThreadPool& pool, bool bf16_activations) {
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
  ImageEncode r;
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

// The machine's limits, measured on all pool threads: read bandwidth (GB/s), f32 FMA peak and
// vdpbf16ps peak (GFLOP/s; 0 without AVX-512 BF16).
struct Ceilings {
  double bandwidth = 0, fma_peak = 0, bf16_peak = 0;
};

Ceilings measure_ceilings(ThreadPool& pool) {
  return {measure_read_bandwidth(pool), cpu::measure_fma_peak_gflop_s(pool), cpu::measure_bf16_dot_peak_gflop_s(pool)};
}

Ceilings best_of(const Ceilings& a, const Ceilings& b) {
  return {std::max(a.bandwidth, b.bandwidth), std::max(a.fma_peak, b.fma_peak), std::max(a.bf16_peak, b.bf16_peak)};
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

void run_bench(const BenchArgs& a) {
  if (a.prompt_len < 1) invalid_argument("-p " + std::to_string(a.prompt_len) + ": the prompt needs at least 1 token");
  if (a.decode_tokens < 1) invalid_argument("-n " + std::to_string(a.decode_tokens) + ": must be at least 1");
  if (a.prompt_len + a.decode_tokens > a.max_seq - 1) {
    invalid_argument("bench: -p " + std::to_string(a.prompt_len) + " plus -n " + std::to_string(a.decode_tokens) +
                     " tokens do not fit max_seq " + std::to_string(a.max_seq) + " (one slot is kept); raise --max-seq");
  }
  check_backend_choice(a.backend);
  apply_kernel_target(a.kernel_target);
  auto ck = Checkpoint::open(a.model);
  if (a.max_seq > ck->config().text.max_position_embeddings) {
    invalid_argument("--max-seq " + std::to_string(a.max_seq) + " exceeds the model's max_position_embeddings " +
                     std::to_string(ck->config().text.max_position_embeddings));
  }
  if (a.image_encode && !ck->config().vision) {
    invalid_argument("bench: --image-encode needs a model with a vision tower; " + a.model + " is text-only");
  }
  const int threads = resolve_threads(a.threads);
  ThreadPool pool(threads);
  const std::string target = cpu::kernel_target();
  std::fprintf(stderr, "bench: measuring memory read bandwidth and compute peaks...\n");
  Ceilings ceilings = measure_ceilings(pool);

  SubgraphProfile profile;
  profile.max_seq = a.max_seq;
  CpuBackendOptions bo;
  bo.pool = &pool;
  bo.bf16_activations = !a.f32_activations;
  auto backend = create_backend(a.backend, *ck, profile, bo);
  auto runtime = Runtime::create(*backend, ck->config(), ck->layers());

  // A fixed prompt of ordinary text ids after <bos>; speed does not depend on which ids.
  std::vector<std::int64_t> prompt(static_cast<std::size_t>(a.prompt_len));
  prompt[0] = ck->config().text.bos_token_id;
  for (std::size_t i = 1; i < prompt.size(); ++i) prompt[i] = 1000 + static_cast<std::int64_t>(i);

  auto t0 = std::chrono::steady_clock::now();
  auto logits = runtime->prefill_tokens(prompt);
  const double prefill_s = seconds_since(t0);
  std::int64_t token = std::max_element(logits.begin(), logits.end()) - logits.begin();
  const double first_token_s = seconds_since(t0);  // the first token id is known here
  t0 = std::chrono::steady_clock::now();
  std::uint64_t decode_rss = resident_bytes();
  for (std::int64_t i = 0; i < a.decode_tokens; ++i) {
    logits = runtime->decode(token);
    token = std::max_element(logits.begin(), logits.end()) - logits.begin();
    decode_rss = std::max(decode_rss, resident_bytes());  // a read of /proc: microseconds
  }
  const double decode_s = seconds_since(t0);
  // What decode must hold: the weights it reads per token and the KV cache.
  const std::uint64_t kv_bytes = static_cast<std::uint64_t>(runtime->cache().bytes());
  std::optional<ImageEncode> image;
  if (a.image_encode) {
    std::fprintf(stderr, "bench: encoding one synthetic image...\n");
    image = run_image_encode(*ck, pool, !a.f32_activations);
  }
  // The ceilings again after the workload, best of both kept: on a shared machine a neighbour
  // can take a core or the memory bus for the seconds one measurement lasts.
  std::fprintf(stderr, "bench: measuring the ceilings again...\n");
  ceilings = best_of(ceilings, measure_ceilings(pool));
  const double bandwidth = ceilings.bandwidth, fma_peak = ceilings.fma_peak, bf16_peak = ceilings.bf16_peak;
  const std::uint64_t rss = process_peak_rss_bytes();

  const double prefill_tps = a.prompt_len / prefill_s, decode_tps = a.decode_tokens / decode_s;
  const std::uint64_t bytes = decode_weight_bytes(*ck);
  const double achieved = decode_tps * static_cast<double>(bytes) / 1e9;
  const std::int64_t flops = prefill_flops(ck->config(), ck->layers(), a.prompt_len);
  const double prefill_gflop_s = static_cast<double>(flops) / prefill_s / 1e9;
  const double image_gflop_s = image ? static_cast<double>(image->flops) / image->seconds / 1e9 : 0.0;
  if (a.json) {
    nlohmann::ordered_json j = {{"model_dir", a.model},
                                {"threads", threads},
                                {"max_seq", a.max_seq},
                                {"dispatch_target", target},
                                {"read_bandwidth_gb_s", bandwidth},
                                {"fma_peak_gflop_s", fma_peak},
                                {"bf16_dot_peak_gflop_s", bf16_peak},
                                {"prompt_tokens", a.prompt_len},
                                {"prefill_seconds", prefill_s},
                                {"prefill_tok_s", prefill_tps},
                                {"prefill_flops", flops},
                                {"prefill_gflop_s", prefill_gflop_s},
                                {"prefill_fraction_of_peak", prefill_gflop_s / fma_peak},
                                {"prefill_fraction_of_bf16_peak",
                                 bf16_peak > 0 ? nlohmann::ordered_json(prefill_gflop_s / bf16_peak) : nullptr},
                                {"time_to_first_token_s", first_token_s},
                                {"decode_tokens", a.decode_tokens},
                                {"decode_seconds", decode_s},
                                {"decode_tok_s", decode_tps},
                                {"decode_weight_bytes_per_token", bytes},
                                {"decode_gb_s", achieved},
                                {"decode_fraction_of_bandwidth", achieved / bandwidth}};
    if (image) {
      j["image_encode_seconds"] = image->seconds;
      j["image_encode_flops"] = image->flops;
      j["image_encode_gflop_s"] = image_gflop_s;
      j["image_encode_fraction_of_peak"] = image_gflop_s / fma_peak;
    }
    j["peak_rss_bytes"] = decode_rss;
    j["kv_cache_bytes"] = kv_bytes;
    j["backend"] = a.backend.backend;
    j["backend_placement"] = backend_placement(*backend, /*with_calls=*/false);
    j["peak_rss_fraction_of_decode_bytes"] =
        static_cast<double>(decode_rss) / static_cast<double>(bytes + kv_bytes);
    j["process_peak_rss_bytes"] = rss;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::printf("bench    %s, %d threads, max_seq %lld, kernels %s\n", a.model.c_str(), threads,
              static_cast<long long>(a.max_seq), target.c_str());
  std::printf("memory   read bandwidth %.1f GB/s (measured)\n", bandwidth);
  std::printf("compute  f32 FMA peak %.1f GFLOP/s (%s, measured)\n", fma_peak, cpu::fma_peak_target().c_str());
  if (bf16_peak > 0) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured)\n", bf16_peak);
  } else {
    std::printf("compute  bf16 dot peak n/a (kernel target %s has no AVX-512 BF16)\n", target.c_str());
  }
  std::string bf16_share;
  if (bf16_peak > 0) bf16_share = ", " + percent(prefill_gflop_s / bf16_peak) + " of the bf16 dot peak";
  std::printf("prefill  %lld tokens in %.3f s: %.2f tok/s; %.3f GFLOP -> %.2f GFLOP/s, %s of the f32 FMA peak%s\n",
              static_cast<long long>(a.prompt_len), prefill_s, prefill_tps, flops / 1e9, prefill_gflop_s,
              percent(prefill_gflop_s / fma_peak).c_str(), bf16_share.c_str());
  std::printf("first    token after %.3f s (prefill and the LM-head argmax)\n", first_token_s);
  std::printf("decode   %lld tokens in %.3f s: %.2f tok/s; %.3f GB of weights per token -> %.2f GB/s, %s of the "
              "measured bandwidth\n",
              static_cast<long long>(a.decode_tokens), decode_s, decode_tps, bytes / 1e9, achieved,
              percent(achieved / bandwidth).c_str());
  if (image) {
    std::printf("image    %lld patches (%lldx%lld grid) -> %lld tokens in %.3f s; %.3f GFLOP -> %.2f GFLOP/s, %s of "
                "the f32 FMA peak\n",
                static_cast<long long>(image->patches), static_cast<long long>(image->grid_height),
                static_cast<long long>(image->grid_width), static_cast<long long>(image->tokens), image->seconds,
                image->flops / 1e9, image_gflop_s, percent(image_gflop_s / fma_peak).c_str());
  }
  std::printf("rss      peak %.3f GB during decode, %.2f x (weights per token %.3f GB + KV cache %.3f GB); "
              "%.3f GB for the whole run (getrusage, incl. the bandwidth buffer)\n",
              decode_rss / 1e9, static_cast<double>(decode_rss) / static_cast<double>(bytes + kv_bytes), bytes / 1e9,
              kv_bytes / 1e9, rss / 1e9);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "measure prefill and decode speed against the machine's measured memory "
                                          "bandwidth and compute peaks");
  cmd->add_option("-m,--model", a->model, "checkpoint directory")->required();
  cmd->add_option("-p,--prompt-len", a->prompt_len, "prompt tokens to prefill")->capture_default_str();
  cmd->add_option("-n,--decode-tokens", a->decode_tokens, "tokens to decode")->capture_default_str();
  cmd->add_option("--max-seq", a->max_seq, "static sequence length")->capture_default_str();
  cmd->add_option("--threads", a->threads, "threads (default: one per hardware thread)");
  cmd->add_flag("--image-encode", a->image_encode,
                "also time one vision_prefill over a full synthetic patch grid (models with a vision tower)");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->add_flag("--f32-activations", a->f32_activations, "keep prefill/vision activations f32 on bf16 weights");
  add_kernel_target_option(*cmd, a->kernel_target);
  add_backend_options(*cmd, a->backend);
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace staticlm::cli
