// staticlm bench -m DIR [-p N] [-n N] [-r N] [--max-seq S] [--threads T] [--image-encode] [--json | -o FMT]
// [--backend cpu|plugin:PATH.so[:k=v,...]] [--fallback none|cpu]:
// prefill and decode speed of the CPU backend on a checkpoint, each next to a ceiling measured
// in the same run. Decode reads every text weight once per token (the tied LM head included; of
// the per-layer embedding table one row), so bytes-per-token x tok/s over the read bandwidth
// says how close decoding runs to the memory limit. Prefill (and, with --image-encode, one
// vision_prefill over a full patch grid) is compute-bound: its flops (model/flops.h) per second
// over the measured f32 FMA and bf16 dot-product peaks say how close it runs to the compute limit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/bench.h"
#include "backends/cpu/kernels/dispatch.h"
#include "base/median.h"
#include "backend_option.h"
#include "commands.h"
#include "kernel_target_option.h"
#include "llama_cpp_flags.h"
#include "threads_option.h"

namespace staticlm::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::int64_t prompt_len = 512;
  std::int64_t decode_tokens = 32;
  std::int64_t max_seq = 1024;
  int threads = 0;
  int repetitions = 1;
  bool image_encode = false;
  bool json = false;
  std::string output = "text";  // llama-bench's -o: text, json, jsonl or md
  bool f32_activations = false;
  bool resident_weights = false;
  std::optional<std::string> kernel_target;
  BackendChoice backend;
};

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

// The mean and the sample standard deviation (0 for one value).
std::pair<double, double> mean_and_sd(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  double sum = 0, sq = 0;
  for (const double v : x) sum += v;
  const double mean = sum / n;
  for (const double v : x) sq += (v - mean) * (v - mean);
  return {mean, x.size() > 1 ? std::sqrt(sq / (n - 1)) : 0.0};
}

std::string plus_minus(const std::vector<double>& x) {
  const auto [mean, sd] = mean_and_sd(x);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f ± %.2f", mean, sd);
  return buf;
}

// llama-bench's markdown table (model, size, params, backend, threads, test, t/s), a row per
// test (ppN: prefill of N tokens, tgN: decoding N, imgN: encoding an image into N tokens), and the share of the ceiling this run
// measured (the f32 FMA peak for pp, the read bandwidth for tg's median step) after it.
void print_markdown(const BenchArgs& a, const api::BenchResult& r, int threads, const std::vector<double>& prefill_rates,
                    const std::vector<double>& decode_rates, double prefill_share, double decode_share) {
  std::uintmax_t size = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(a.model, ec)) {
    if (e.path().extension() == ".safetensors") size += e.file_size(ec);
  }
  const std::string name = std::filesystem::path(a.model).lexically_normal().filename().string();
  char model[256], size_text[32], params[32];
  std::snprintf(model, sizeof model, "%s %s", name.empty() ? a.model.c_str() : name.c_str(),
                r.quantization_scheme == "none" ? "(unquantized)" : r.quantization_scheme.c_str());
  std::snprintf(size_text, sizeof size_text, "%.2f GiB", static_cast<double>(size) / (1024.0 * 1024.0 * 1024.0));
  std::snprintf(params, sizeof params, "%.2f B", static_cast<double>(r.parameters) / 1e9);
  const std::string backend = a.backend.backend == "cpu" ? "CPU (" + r.dispatch_target + ")" : a.backend.backend;
  std::printf("| model | size | params | backend | threads | test | t/s | of the ceiling |\n");
  std::printf("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n");
  const auto row = [&](const std::string& test, const std::vector<double>& rates, double share, const char* ceiling) {
    std::printf("| %s | %s | %s | %s | %d | %s | %s | %s %s |\n", model, size_text, params, backend.c_str(), threads, test.c_str(),
                plus_minus(rates).c_str(), percent(share).c_str(), ceiling);
  };
  row("pp" + std::to_string(a.prompt_len), prefill_rates, prefill_share, "FMA");
  row("tg" + std::to_string(a.decode_tokens), decode_rates, decode_share, "bandwidth");
  if (r.image) {  // encoded once: its image tokens per second, no deviation
    const double gflop_s = static_cast<double>(r.image->flops) / r.image->seconds / 1e9;
    std::printf("| %s | %s | %s | %s | %d | img%lld | %.2f | %s FMA |\n", model, size_text, params, backend.c_str(), threads,
                static_cast<long long>(r.image->tokens), static_cast<double>(r.image->tokens) / r.image->seconds,
                percent(gflop_s / r.fma_peak_gflop_s).c_str());
  }
}

// A thin adapter over the library's measurement (api/bench.h): flags in, the report out.
void bench_command(const BenchArgs& a) {
  api::BenchOptions o;
  o.model = a.model;
  o.prompt_len = a.prompt_len;
  o.decode_tokens = a.decode_tokens;
  o.max_seq = a.max_seq;
  o.threads = resolve_threads(a.threads);
  o.repetitions = a.repetitions;
  o.image_encode = a.image_encode;
  o.f32_activations = a.f32_activations;
  o.resident_weights = a.resident_weights;
  o.backend = a.backend;
  o.kernel_target = a.kernel_target;
  o.log = log_to_stderr;
  const api::BenchResult r = api::run_bench(o);
  const int threads = o.threads;
  const std::string& target = r.dispatch_target;
  const double bandwidth = r.read_bandwidth_gb_s, fma_peak = r.fma_peak_gflop_s, bf16_peak = r.bf16_dot_peak_gflop_s;
  const double prefill_s = r.prefill_seconds, decode_s = r.decode_seconds, first_token_s = r.time_to_first_token_seconds;
  const std::uint64_t decode_rss = r.decode_peak_rss_bytes, kv_bytes = r.kv_cache_bytes, rss = r.process_peak_rss_bytes;
  const std::optional<api::BenchImageEncode>& image = r.image;
  const double prefill_tps = a.prompt_len / prefill_s, decode_tps = a.decode_tokens / decode_s;
  const std::uint64_t bytes = r.decode_weight_bytes;
  const double achieved = decode_tps * static_cast<double>(bytes) / 1e9;
  // Per decode step: the median step's rate next to the mean one (steps the host preempted and
  // the first step's warm-up weigh on the mean only), the fastest and slowest steps.
  const std::vector<double>& steps = r.decode_step_seconds;
  const double step_median = median(steps);
  const double step_min = steps.empty() ? 0.0 : *std::min_element(steps.begin(), steps.end());
  const double step_max = steps.empty() ? 0.0 : *std::max_element(steps.begin(), steps.end());
  const double step_first = steps.empty() ? 0.0 : steps.front();
  const double median_gb_s = step_median > 0 ? static_cast<double>(bytes) / step_median / 1e9 : 0.0;
  const std::int64_t flops = r.prefill_flops;
  const double prefill_gflop_s = static_cast<double>(flops) / prefill_s / 1e9;
  const double image_gflop_s = image ? static_cast<double>(image->flops) / image->seconds / 1e9 : 0.0;
  // Tokens per second of each repetition: their mean and sample deviation, as llama-bench.
  const auto rates = [](std::int64_t tokens, const std::vector<double>& seconds) {
    std::vector<double> tps;
    for (const double s : seconds) tps.push_back(static_cast<double>(tokens) / s);
    return tps;
  };
  const std::vector<double> prefill_rates = rates(a.prompt_len, r.prefill_seconds_each);
  const std::vector<double> decode_rates = rates(a.decode_tokens, r.decode_seconds_each);
  if (a.output == "md") {
    print_markdown(a, r, threads, prefill_rates, decode_rates, prefill_gflop_s / fma_peak, median_gb_s / bandwidth);
    return;
  }
  if (a.json || a.output == "json" || a.output == "jsonl") {
    nlohmann::ordered_json j = {{"model_dir", a.model},
                                {"threads", threads},
                                {"max_seq", a.max_seq},
                                {"dispatch_target", target},
                                {"read_bandwidth_gb_s", bandwidth},
                                {"weights_in_huge_pages", a.resident_weights},
                                {"fma_peak_gflop_s", fma_peak},
                                {"bf16_dot_peak_gflop_s", bf16_peak},
                                {"bf16_dot_kernels", r.bf16_dot_kernels},
                                {"bf16_dot_speed_over_fma", r.bf16_dot_speed_over_fma},
                                {"repetitions", a.repetitions},
                                {"prompt_tokens", a.prompt_len},
                                {"prefill_seconds", prefill_s},
                                {"prefill_tok_s", prefill_tps},
                                {"prefill_seconds_each", r.prefill_seconds_each},
                                {"prefill_tok_s_mean", mean_and_sd(prefill_rates).first},
                                {"prefill_tok_s_stdev", mean_and_sd(prefill_rates).second},
                                {"prefill_flops", flops},
                                {"prefill_gflop_s", prefill_gflop_s},
                                {"prefill_fraction_of_peak", prefill_gflop_s / fma_peak},
                                {"prefill_fraction_of_bf16_peak",
                                 r.bf16_dot_kernels ? nlohmann::ordered_json(prefill_gflop_s / bf16_peak) : nullptr},
                                {"time_to_first_token_s", first_token_s},
                                {"decode_tokens", a.decode_tokens},
                                {"decode_seconds", decode_s},
                                {"decode_tok_s", decode_tps},
                                {"decode_seconds_each", r.decode_seconds_each},
                                {"decode_tok_s_mean", mean_and_sd(decode_rates).first},
                                {"decode_tok_s_stdev", mean_and_sd(decode_rates).second},
                                {"decode_weight_bytes_per_token", bytes},
                                {"decode_gb_s", achieved},
                                {"decode_fraction_of_bandwidth", achieved / bandwidth},
                                {"decode_step_seconds", steps},
                                {"decode_step_median_s", step_median},
                                {"decode_step_min_s", step_min},
                                {"decode_step_max_s", step_max},
                                {"decode_median_step_gb_s", median_gb_s},
                                {"decode_median_step_fraction_of_bandwidth", median_gb_s / bandwidth},
                                {"weight_matrices", r.matrices.matrices},
                                {"weight_matrices_on_cache_lines", r.matrices.on_cache_lines}};
    if (image) {
      j["image_encode_seconds"] = image->seconds;
      j["image_encode_flops"] = image->flops;
      j["image_encode_gflop_s"] = image_gflop_s;
      j["image_encode_fraction_of_peak"] = image_gflop_s / fma_peak;
    }
    j["peak_rss_bytes"] = decode_rss;
    j["kv_cache_bytes"] = kv_bytes;
    j["backend"] = a.backend.backend;
    j["backend_placement"] = r.backend_placement;
    j["peak_rss_fraction_of_decode_bytes"] =
        static_cast<double>(decode_rss) / static_cast<double>(bytes + kv_bytes);
    j["process_peak_rss_bytes"] = rss;
    j["quantization_scheme"] = r.quantization_scheme;
    j["parameters"] = r.parameters;
    std::cout << j.dump(a.output == "jsonl" ? -1 : 2) << "\n";
    return;
  }
  std::printf("bench    %s, %d threads, max_seq %lld, kernels %s\n", a.model.c_str(), threads,
              static_cast<long long>(a.max_seq), target.c_str());
  std::printf("memory   read bandwidth %.1f GB/s (measured%s)\n", bandwidth,
              a.resident_weights ? " on 2 MiB pages, as the --no-mmap weights" : "");
  std::printf("compute  f32 FMA peak %.1f GFLOP/s (%s, measured)\n", fma_peak, r.fma_peak_target.c_str());
  if (r.bf16_dot_kernels) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured)\n", bf16_peak);
  } else if (bf16_peak > 0 && target == cpu::default_kernel_target()) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured; not used: it runs at %.2fx the f32 FMA's "
                "flops on this CPU, so bf16 GEMMs multiply bf16-rounded activations with f32 FMAs)\n",
                bf16_peak, r.bf16_dot_speed_over_fma);
  } else if (bf16_peak > 0) {
    std::printf("compute  bf16 dot peak %.1f GFLOP/s (vdpbf16ps, measured; not used by the pinned kernel target %s)\n", bf16_peak,
                target.c_str());
  } else {
    std::printf("compute  bf16 dot peak n/a (this CPU has no AVX-512 BF16)\n");
  }
  std::string bf16_share;
  if (r.bf16_dot_kernels) bf16_share = ", " + percent(prefill_gflop_s / bf16_peak) + " of the bf16 dot peak";
  std::printf("prefill  %lld tokens in %.3f s: %.2f tok/s; %.3f GFLOP -> %.2f GFLOP/s, %s of the f32 FMA peak%s\n",
              static_cast<long long>(a.prompt_len), prefill_s, prefill_tps, flops / 1e9, prefill_gflop_s,
              percent(prefill_gflop_s / fma_peak).c_str(), bf16_share.c_str());
  if (a.repetitions > 1) {
    std::printf("runs     %d: prefill %s tok/s, decode %s tok/s (mean ± sample deviation of the runs' rates; the seconds "
                "above are their means)\n",
                a.repetitions, plus_minus(prefill_rates).c_str(), plus_minus(decode_rates).c_str());
  }
  std::printf("first    token after %.3f s (prefill and the LM-head argmax)\n", first_token_s);
  std::printf("decode   %lld tokens in %.3f s: %.2f tok/s; %.3f GB of weights per token -> %.2f GB/s, %s of the "
              "measured bandwidth\n",
              static_cast<long long>(a.decode_tokens), decode_s, decode_tps, bytes / 1e9, achieved,
              percent(achieved / bandwidth).c_str());
  std::printf("decode   per step: median %.2f ms -> %.2f GB/s, %s of the measured bandwidth; fastest %.2f ms, "
              "slowest %.2f ms, first %.2f ms\n",
              step_median * 1e3, median_gb_s, percent(median_gb_s / bandwidth).c_str(), step_min * 1e3,
              step_max * 1e3, step_first * 1e3);
  if (r.matrices.on_cache_lines < r.matrices.matrices) {
    std::printf("note     %d of %d weight matrices start off a 64-byte cache line: their rows straddle lines and "
                "decode streams them slower (quantize and make-model write them on lines)\n",
                r.matrices.matrices - r.matrices.on_cache_lines, r.matrices.matrices);
  }
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
  cmd->add_option("--max-seq", a->max_seq, "static sequence length")->capture_default_str()->check(max_seq_range());
  cmd->add_option("-t,--threads", a->threads, "threads (default: one per hardware thread)");
  cmd->add_flag("--image-encode", a->image_encode,
                "also time one vision_prefill over a full synthetic patch grid (models with a vision tower)");
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->add_option("-r,--repetitions", a->repetitions, "prefill and decode this many times on the loaded model; t/s as mean ± "
                                                     "sample deviation (llama-bench's -r; default 1)");
  cmd->add_option("-o,--output", a->output, "text (default), json (as --json), jsonl (one line) or md (llama-bench's table)")
      ->check(CLI::IsMember({"text", "json", "jsonl", "md"}));
  add_llama_cpp_tuning_flags(*cmd);
  cmd->add_flag("--f32-activations", a->f32_activations, "keep prefill/vision activations f32 on bf16 weights");
  add_kernel_target_option(*cmd, a->kernel_target);
  add_backend_options(*cmd, a->backend);
  add_mmap_flags(*cmd, a->resident_weights);
  cmd->callback([a] { bench_command(*a); });
}

}  // namespace staticlm::cli
